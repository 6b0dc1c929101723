// Peer: none (ajv over the package's own schemas).
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type ProxySpec,
  proxySpecSchema,
  validateProxyManifest,
  validateProxySpec,
} from '../src/api/proxy.js';

const manifest = {
  apiVersion: 'proxy-op.io/v1alpha1',
  kind: 'Proxy',
  metadata: { name: 'web' },
  spec: { provider: 'lab', allowedSources: ['10.0.0.0/8'] },
};

describe('Proxy schema', () => {
  it('fills in defaults (namespace, port, placement) without touching the input', () => {
    const input = structuredClone(manifest);
    const v = validateProxyManifest(input);
    expect(v.ok).toBe(true);
    if (!v.ok) return;
    expect(v.value.metadata.namespace).toBe('default');
    expect(v.value.spec.port).toBe(3128);
    expect(v.value.spec.placement).toEqual({});
    expect(input).toEqual(manifest);
  });

  it('reports every problem with its path', () => {
    const v = validateProxyManifest({
      apiVersion: 'v1',
      kind: 'Proxy',
      metadata: { name: 'Web_1' },
      spec: {
        provider: 'Lab',
        port: 70000,
        allowedSources: ['10.0.0.0/33', 'fd00::/8', 'everyone'],
        placement: { zone: '' },
        extra: true,
      },
    });
    expect(v.ok).toBe(false);
    if (v.ok) return;
    const paths = v.problems.map((p) => p.path).sort();
    expect(paths).toEqual(
      [
        'apiVersion',
        'metadata.name',
        'spec',
        'spec.provider',
        'spec.port',
        'spec.allowedSources[0]',
        'spec.allowedSources[2]',
        'spec.placement.zone',
      ].sort(),
    );
    expect(v.problems.find((p) => p.path === 'spec')?.message).toContain('extra');
  });

  it('refuses a source the pattern lets through but that is no address, naming it', () => {
    const v = validateProxySpec({ provider: 'lab', allowedSources: ['10.0.0.0/8', '1:2:3/64'] });
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(v.problems).toEqual([
      {
        path: 'spec.allowedSources[1]',
        message: '"1:2:3/64" does not start with an IPv4 or IPv6 address',
      },
    ]);
    const m = validateProxyManifest({
      apiVersion: 'proxy-op.io/v1alpha1',
      kind: 'Proxy',
      metadata: { name: 'web' },
      spec: { provider: 'lab', allowedSources: [':::/8'] },
    });
    expect(m.ok ? [] : m.problems.map((p) => p.path)).toEqual(['spec.allowedSources[0]']);
  });

  it('requires at least one allowed source', () => {
    const v = validateProxySpec({ provider: 'lab', allowedSources: [] });
    expect(v.ok).toBe(false);
  });

  it('derives the TypeScript type from the schema', () => {
    expectTypeOf<ProxySpec['port']>().toEqualTypeOf<number>();
    expectTypeOf<ProxySpec['provider']>().toEqualTypeOf<string>();
    expectTypeOf<ProxySpec['cloudInit']>().toEqualTypeOf<string | undefined>();
    expect(proxySpecSchema.properties.port.default).toBe(3128);
  });
});
