// Peer: none (pure functions).
import { describe, expect, it } from 'vitest';
import { renderCloudInit, renderSquidConfig, specHash } from '../src/index.js';
import { spec } from './support.js';

describe('default cloud-init', () => {
  const s = spec({ provider: 'lab', port: 8080, allowedSources: ['10.0.0.0/8', '192.168.1.0/24'] });

  it('allows only the allowed sources on the port', () => {
    const conf = renderSquidConfig(s);
    expect(conf).toContain('http_port 8080\n');
    expect(conf).toContain('acl proxy_op_allowed src 10.0.0.0/8\n');
    expect(conf).toContain('acl proxy_op_allowed src 192.168.1.0/24\n');
    expect(conf).toContain('http_access allow proxy_op_allowed\nhttp_access deny all\n');
    expect(conf).not.toMatch(/http_access allow all/);
  });

  it('installs Squid with cloud-config for Debian/Ubuntu and is deterministic', () => {
    const a = renderCloudInit(s);
    expect(a.startsWith('#cloud-config\n')).toBe(true);
    expect(a).toContain('  - squid\n');
    expect(a).toContain('      http_port 8080\n');
    expect(renderCloudInit(structuredClone(s))).toBe(a);
  });

  it('is replaced by spec.cloudInit', () => {
    expect(renderCloudInit({ ...s, cloudInit: '#!/bin/sh\necho hi\n' })).toBe(
      '#!/bin/sh\necho hi\n',
    );
  });
});

describe('specHash', () => {
  const base = spec({ provider: 'lab', placement: { zone: 'a', image: 'debian-13' } });

  it('ignores key order and changes with every hashed field', () => {
    const reordered = spec({ placement: { image: 'debian-13', zone: 'a' }, provider: 'lab' });
    expect(specHash(reordered)).toBe(specHash(base));
    const variants = [
      { ...base, provider: 'other' },
      { ...base, port: 3129 },
      { ...base, allowedSources: ['10.0.0.0/16'] },
      { ...base, placement: { zone: 'b', image: 'debian-13' } },
      { ...base, cloudInit: '#cloud-config\n' },
    ];
    const hashes = new Set([specHash(base), ...variants.map(specHash)]);
    expect(hashes.size).toBe(variants.length + 1);
  });
});
