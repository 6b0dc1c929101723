// Peer: none (pure functions): the config schema (and the README's table of it), address ranges
// and state mapping.
import { readFile } from 'node:fs/promises';
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

  it('takes a destination policy, and refuses a bad one naming each entry and the fix', async () => {
    const policy = { allow: ['127.0.0.1:8080', '10.20.0.0/16'], deny: ['10.20.99.0/24'] };
    expect((await validateConfig(configSchema, { egress: policy })).egress).toEqual(policy);
    expect(CONFIG_DEFAULTS).not.toHaveProperty('egress');
    const err = await validateConfig(
      configSchema,
      { egress: { allow: ['10.0.0.0/8', '10.0.0.0/33'], connectPorts: [0], open: true } },
      'providers[0].local',
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([
      'providers[0].local.egress.open: unknown field; use allow, deny, connectPorts or httpPorts',
      expect.stringMatching(
        /^providers\[0\]\.local\.egress\.allow\[1\]: "10\.0\.0\.0\/33" is not a CIDR, address or host name; write /,
      ),
      expect.stringMatching(/^providers\[0\]\.local\.egress\.connectPorts\[0\]: 0 is not a port/),
    ]);
    const notObject = await validateConfig(configSchema, { egress: ['10.0.0.0/8'] }).catch(
      (e: unknown) => e,
    );
    expect((notObject as ConfigError).problems).toEqual([
      'egress: must be an object with allow, deny, connectPorts or httpPorts',
    ]);
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

describe('the README', () => {
  it('lists every field of the config with the default CONFIG_DEFAULTS has', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    const start = readme.indexOf('| field | default | meaning |');
    const rows = readme
      .slice(start)
      .split('\n')
      .filter((_, i, all) => all.slice(0, i + 1).every((l) => l.startsWith('|')))
      .slice(2)
      .map((l) =>
        l
          .slice(1, -1)
          .split(' | ')
          .map((c) => c.trim()),
      );
    const defaults = new Map(rows.map((r) => [r[0], r[1]]));
    const nested = (group: 'timeouts' | 'limits'): [string, string][] =>
      Object.entries(CONFIG_DEFAULTS[group]).map(([k, v]) => [`\`${group}.${k}\``, `\`${v}\``]);
    const expected = new Map<string, string>([
      ['`stateDir`', '`$XDG_STATE_HOME/proxy-op/local`, else `~/.local/state/proxy-op/local`'],
      ['`addressRange`', `\`${CONFIG_DEFAULTS.addressRange}\``],
      ['`allowedSources`', `\`${JSON.stringify(CONFIG_DEFAULTS.allowedSources)}\``],
      ['`egress`', "none: the forward proxy's safe default"],
      ['`zone`', `\`${CONFIG_DEFAULTS.zone}\``],
      ['`nodePath`', 'the Node.js running the provider'],
      ...nested('timeouts'),
      ...nested('limits'),
    ]);
    expect([...defaults.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [field, value] of expected) expect(defaults.get(field), field).toBe(value);
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
