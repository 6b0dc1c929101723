// Peer: none (pure functions): the config schema, address ranges and state mapping.
import { ConfigError, createProvider, validateConfig } from '@proxy-op/contract';
import { describe, expect, it } from 'vitest';
import { preferredIndex } from '../src/address.js';
import { loopbackHosts } from '../src/cidr.js';
import { defaultStateDir } from '../src/config.js';
import { CONFIG_DEFAULTS, configSchema, providerModule } from '../src/index.js';
import { mapLocalState } from '../src/state.js';

describe('config schema', () => {
  it('fills every default for an empty block', async () => {
    const config = await validateConfig(configSchema, {});
    expect(config).toEqual(CONFIG_DEFAULTS);
    expect(config.addressRange).toBe('127.0.0.0/24');
    expect(config.allowedSources).toEqual(['127.0.0.0/8']);
  });

  it('names the path of every problem at once', async () => {
    const err = await validateConfig(
      configSchema,
      {
        stateDir: 'relative/dir',
        addressRange: '10.0.0.0/24',
        allowedSources: ['127.0.0.1/33', 'nope'],
        timeouts: { startMs: 0, bogus: 1 },
        limits: { maxConnections: 'many' },
        extra: true,
      },
      'providers[0].local',
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems;
    for (const path of [
      'providers[0].local.stateDir:',
      'providers[0].local.addressRange:',
      'providers[0].local.allowedSources[0]:',
      'providers[0].local.allowedSources[1]:',
      'providers[0].local.timeouts.startMs:',
      'providers[0].local.timeouts.bogus:',
      'providers[0].local.limits.maxConnections:',
      'providers[0].local.extra:',
    ]) {
      expect(
        problems.some((p) => p.startsWith(path)),
        path,
      ).toBe(true);
    }
  });

  it("keeps its state in the user's XDG state folder by default, not the shared temp folder", () => {
    expect(defaultStateDir({ XDG_STATE_HOME: '/srv/state' }, '/home/ada')).toBe(
      '/srv/state/proxy-op/local',
    );
    expect(defaultStateDir({}, '/home/ada')).toBe('/home/ada/.local/state/proxy-op/local');
    // A relative XDG_STATE_HOME is ignored, as the XDG spec asks.
    expect(defaultStateDir({ XDG_STATE_HOME: 'state' }, '/home/ada')).toBe(
      '/home/ada/.local/state/proxy-op/local',
    );
    expect(CONFIG_DEFAULTS.stateDir).toBe(defaultStateDir());
  });

  it('builds a provider without touching the machine', async () => {
    const provider = await createProvider(
      providerModule,
      'local-1',
      { stateDir: '/nonexistent/never/created' },
      {},
    );
    expect(provider.type).toBe('local');
    expect(provider.name).toBe('local-1');
  });
});

describe('addresses and sources', () => {
  it('lists the hosts of a range without network, broadcast or 127.0.0.1', () => {
    const hosts = loopbackHosts('127.0.0.0/24');
    expect(hosts).toHaveLength(253);
    expect(hosts[0]).toBe('127.0.0.2');
    expect(hosts.at(-1)).toBe('127.0.0.254');
    expect(loopbackHosts('127.0.3.7/32')).toEqual(['127.0.3.7']);
  });

  it('picks the same first address for the same name and UID', () => {
    expect(preferredIndex('proxy-a', 'uid-1', 253)).toBe(preferredIndex('proxy-a', 'uid-1', 253));
    const spread = new Set(
      Array.from({ length: 50 }, (_, i) => preferredIndex(`p-${i}`, `u-${i}`, 253)),
    );
    expect(spread.size).toBeGreaterThan(30);
  });
});

describe('state mapping', () => {
  const rec = {
    version: 1 as const,
    name: 'p',
    marks: {},
    address: '127.0.0.9',
    port: 3128,
    allowedSources: [],
    accessLog: '',
  };
  it('is Running only when the process lives and answers', () => {
    expect(mapLocalState({ ...rec, phase: 'running', pid: 1 }, true, true)).toBe('Running');
    expect(mapLocalState({ ...rec, phase: 'running', pid: 1 }, true, false)).toBe('Provisioning');
    expect(mapLocalState({ ...rec, phase: 'running', pid: 1 }, false, false)).toBe('Stopped');
    expect(mapLocalState({ ...rec, phase: 'starting' }, undefined, false)).toBe('Provisioning');
    expect(mapLocalState({ ...rec, phase: 'hibernating' }, true, true)).toBe('Stopped');
  });
});
