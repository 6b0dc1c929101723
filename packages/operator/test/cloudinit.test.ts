// Peers: none for the text; cloud-init (schema) and Squid (-k parse) read what it renders.

import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { hashPassword } from '@proxy-op/forward-proxy';
import { describeWithPeers } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { parse as parseYaml } from 'yaml';
import { renderCloudInit, renderSquidConfig, specHash } from '../src/proxy/cloudinit.js';
import { spec } from './support.js';

const { describe, expect, it } = vitest;
const run = promisify(execFile);

describe('default cloud-init', () => {
  const s = spec({ provider: 'lab', port: 8080, allowedSources: ['10.0.0.0/8', '192.168.1.0/24'] });

  it('allows only the allowed sources on the port', () => {
    const conf = renderSquidConfig(s);
    expect(conf).toContain('http_port 8080\n');
    expect(conf).toContain('acl proxy_op_allowed src 10.0.0.0/8\n');
    expect(conf).toContain('acl proxy_op_allowed src 192.168.1.0/24\n');
    expect(conf).toContain('http_access allow proxy_op_allowed\nhttp_access deny all\n');
    expect(conf).not.toMatch(/http_access allow all/);
    expect(conf).toContain('http_access deny manager\n');
    expect(conf).toContain('strip_query_terms on\n');
    expect(conf).toContain('access_log stdio:/var/log/squid/access.log\n');
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
    const hashes = new Set([specHash(base), ...variants.map((v) => specHash(v))]);
    expect(hashes.size).toBe(variants.length + 1);
  });
});

describeWithPeers(
  vitest,
  'the default cloud-init, read by the real cloud-init and Squid',
  ['cloud-init', 'squid'],
  () => {
    let dir: string;
    vitest.beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'operator-cloudinit-'));
    });
    vitest.afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });
    const s = spec({
      provider: 'lab',
      port: 3129,
      allowedSources: ['10.1.0.0/16', '10.0.0.0/8', '0.0.0.0/0', 'fd00::/8'],
    });

    it('is valid cloud-config for cloud-init schema', async () => {
      const file = join(dir, 'user-data');
      await writeFile(file, renderCloudInit(s));
      const { stdout } = await run('cloud-init', ['schema', '-c', file]);
      expect(stdout).toContain('Valid cloud-config');
    });

    it('with credentials: valid cloud-config, the password file given to the proxy group before Squid restarts, Squid asking for it', async () => {
      const line = `web-1a2b3c:${hashPassword('SENTINEL-p$ss:w@rd', { salt: 'saltsaltsaltsalt' })}\n`;
      const auth = { realm: 'proxy-op default/web', passwordFile: new TextEncoder().encode(line) };
      const text = renderCloudInit(s, auth);
      const file = join(dir, 'user-data-auth');
      await writeFile(file, text);
      const { stdout } = await run('cloud-init', ['schema', '-c', file]);
      expect(stdout).toContain('Valid cloud-config');
      const doc = parseYaml(text.replace(/^#cloud-config\n/, '')) as {
        write_files: {
          path: string;
          content: string;
          owner: string;
          permissions: string;
        }[];
        runcmd: string[][];
      };
      const passwd = doc.write_files.find((f) => f.path === '/etc/squid/passwd');
      expect(passwd).toEqual({
        path: '/etc/squid/passwd',
        owner: 'root:root',
        permissions: '0640',
        content: line,
      });
      expect(doc.runcmd).toEqual([
        ['chgrp', 'proxy', '/etc/squid/passwd'],
        ['systemctl', 'enable', 'squid'],
        ['systemctl', 'restart', 'squid'],
      ]);
      expect(text).not.toContain('SENTINEL');
      const conf = doc.write_files.find((f) => f.path === '/etc/squid/conf.d/proxy-op.conf');
      expect(conf?.content).toBe(renderSquidConfig(s, auth));
      expect(conf?.content).toContain(
        'auth_param basic program /usr/lib/squid/basic_ncsa_auth /etc/squid/passwd\n',
      );
      const squidFile = join(dir, 'squid-auth.conf');
      await writeFile(squidFile, conf?.content ?? '');
      const parsed = await run('squid', ['-k', 'parse', '-f', squidFile]);
      const out = `${parsed.stdout}\n${parsed.stderr}`;
      expect(out.split('\n').filter((l) => /FATAL|ERROR|Bungled/i.test(l))).toEqual([]);
    });

    it('writes a Squid configuration that squid -k parse reads without a warning', async () => {
      const doc = parseYaml(renderCloudInit(s).replace(/^#cloud-config\n/, '')) as {
        write_files: { path: string; content: string }[];
      };
      const conf = doc.write_files.find((f) => f.path === '/etc/squid/conf.d/proxy-op.conf');
      expect(conf?.content).toBe(renderSquidConfig(s));
      expect(conf?.content).toContain('pid_filename /run/squid.pid\n');
      // The destination policy's defaults: the host's loopback, link-local (metadata) and
      // private destinations refused, CONNECT to 443 only.
      expect(conf?.content).toContain('http_access deny to_localhost\n');
      expect(conf?.content).toContain('http_access deny proxy_op_refused_link_local\n');
      expect(conf?.content).toContain('http_access deny proxy_op_refused_private\n');
      expect(conf?.content).toContain('http_access deny CONNECT !proxy_op_connect_ports\n');
      const file = join(dir, 'squid.conf');
      await writeFile(file, conf?.content ?? '');
      const { stdout, stderr } = await run('squid', ['-k', 'parse', '-f', file]);
      const out = `${stdout}\n${stderr}`;
      expect(out).toContain(`Processing Configuration File: ${file}`);
      expect(out.split('\n').filter((l) => /FATAL|ERROR|WARNING|Bungled/i.test(l))).toEqual([]);
    });
  },
);
