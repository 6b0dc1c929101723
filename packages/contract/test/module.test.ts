// Peer: none (in-process); the logger test uses the real pino.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  billingOf,
  ConfigError,
  type ConfigSchema,
  createProvider,
  formatConfigIssues,
  ipv6EgressOf,
  type Logger,
  PROFILE_AXES,
  type Profile,
  type ProviderDeps,
  type ProviderModule,
  preemptionOf,
  profileProblems,
  silentLogger,
  validateConfig,
} from '../src/index.js';

const profile: Profile = {
  readiness: 'immediate',
  createReturn: 'blocking',
  deleteReturn: 'waits',
  ipSource: 'assigned-at-create',
  gcMark: 'written-metadata',
  createdAt: 'written-at-create',
  listPartial: 'single-call',
  quota: 'absent',
  notFound: 'list-and-miss',
  primaryKey: 'name-is-key',
  provisioningState: 'native',
  asyncOps: [],
  secondaryResources: 'none',
  credentials: 'none',
  clientKind: 'in-process',
  timeouts: 'signal-only',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'local-peer',
};

const schema: ConfigSchema<{ size: number }> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate(v) {
      const o = (v ?? {}) as { size?: unknown; hosts?: unknown };
      const issues = [];
      if (o.size !== undefined && typeof o.size !== 'number') {
        issues.push({ message: 'must be a number', path: ['size'] });
      }
      if (o.hosts !== undefined)
        issues.push({ message: 'unknown field', path: [{ key: 'hosts' }, 0] });
      return issues.length > 0 ? { issues } : { value: { size: (o.size as number) ?? 10 } };
    },
  },
};

const mod: ProviderModule<{ size: number }, ProviderDeps, string> = {
  type: 'fake',
  configSchema: schema,
  profile,
  classify: () => 'Transient',
  create: () => ({
    ids: {
      parse: (id) => (id.startsWith('boxes/') ? id.slice(6) : undefined),
      shape: 'boxes/<name>',
    },
    lockKey: (name) => name,
    create: async (req) => `boxes/${req.name}`,
    get: async (name) => ({ id: `boxes/${name}`, uid: '', createdAt: new Date(0) }),
    delete: async () => {},
    list: async () => [],
  }),
};

describe('profile', () => {
  it('has the twenty-three axes of contract §4', () => {
    expect(PROFILE_AXES).toHaveLength(23);
    expect(profileProblems(profile)).toEqual([]);
  });

  it('names each bad axis', () => {
    expect(profileProblems({ ...profile, readiness: 'soon', asyncOps: 'none' })).toEqual([
      'profile.readiness: must be one of immediate, provisioning-window',
      'profile.asyncOps: must be an array of task-handle, backend-lock (empty for none)',
    ]);
    expect(profileProblems(null)).toEqual(['profile: must be an object']);
  });

  it('reads the optional axes of §4.21 to §4.23 and names a bad choice', () => {
    expect(billingOf(profile)).toBe('none');
    expect(preemptionOf(profile)).toBe('never');
    expect(ipv6EgressOf(profile)).toBe('none');
    const cloud = {
      ...profile,
      billing: { period: 'second', minimumSeconds: 60 },
      preemption: 'possible',
      ipv6Egress: 'range',
    } as const;
    expect(profileProblems(cloud)).toEqual([]);
    expect(billingOf(cloud)).toEqual({ period: 'second', minimumSeconds: 60 });
    expect(preemptionOf(cloud)).toBe('possible');
    expect(ipv6EgressOf(cloud)).toBe('range');
    expect(profileProblems({ ...profile, billing: 'hourly' })).toEqual([
      "profile.billing: must be 'none' or { period: 'second' | 'minute' | 'hour', minimumSeconds: n }",
    ]);
    expect(profileProblems({ ...profile, billing: { period: 'day', minimumSeconds: 0 } })).toEqual([
      'profile.billing.period: must be one of second, minute, hour',
    ]);
    expect(
      profileProblems({ ...profile, billing: { period: 'hour', minimumSeconds: -1 } }),
    ).toEqual(['profile.billing.minimumSeconds: must be a whole number of seconds, 0 or more']);
    expect(profileProblems({ ...profile, preemption: 'sometimes', ipv6Egress: 'v6' })).toEqual([
      'profile.preemption: must be one of possible, never',
      'profile.ipv6Egress: must be one of range, none',
    ]);
  });
});

describe('ConfigError', () => {
  it('is known from any copy of the package by its brand, not by its class', () => {
    const err = new ConfigError(['acme.zones: is required']);
    expect(ConfigError.isInstance(err)).toBe(true);
    // What another copy of the contract would throw: the same brand, another class.
    const other = Object.defineProperty(
      Object.assign(new Error('invalid provider config'), { problems: ['x: bad'] }),
      Symbol.for('@proxy-op/contract.ConfigError'),
      { value: true },
    );
    expect(ConfigError.isInstance(other)).toBe(true);
    expect(ConfigError.isInstance(new Error('invalid provider config'))).toBe(false);
    expect(ConfigError.isInstance({ problems: [] })).toBe(false);
    expect(ConfigError.isInstance(null)).toBe(false);
  });
});

describe('config', () => {
  it('formats issue paths', () => {
    expect(
      formatConfigIssues(
        [
          { message: 'm1', path: ['hosts', 2, 'name'] },
          { message: 'm2' },
          { message: 'm3', path: [{ key: 'a' }] },
        ],
        'providers[0].kvm2',
      ),
    ).toEqual([
      'providers[0].kvm2.hosts[2].name: m1',
      'providers[0].kvm2: m2',
      'providers[0].kvm2.a: m3',
    ]);
  });

  it('validateConfig fills defaults or throws every issue', async () => {
    await expect(validateConfig(schema, {})).resolves.toEqual({ size: 10 });
    const err = await validateConfig(schema, { size: 'x', hosts: [] }, 'fake').catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([
      'fake.size: must be a number',
      'fake.hosts[0]: unknown field',
    ]);
    expect((err as ConfigError).code).toBe('PROVIDER_CONFIG_INVALID');
  });
});

describe('createProvider', () => {
  it('validates, builds and observes', async () => {
    const p = await createProvider(mod, 'fake-a', { size: 3 }, {});
    expect(p.name).toBe('fake-a');
    const req = {
      name: 'proxy-a',
      namespace: 'ns',
      uid: 'u1',
      port: 3128,
      cloudInit: new Uint8Array(),
      placement: {},
    };
    await expect(p.create(req)).resolves.toBe('boxes/proxy-a');
    await expect(p.get('boxes/proxy-a')).resolves.toMatchObject({ id: 'boxes/proxy-a' });
    const err = await p.get('crates/x').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'PROVIDER_PERMANENT', provider: 'fake-a', op: 'get' });
    expect(String((err as Error).message)).toContain('boxes/<name>');
  });

  it('refuses a module without classify or whose create returns something else', async () => {
    const { classify: _c, ...noClassify } = mod;
    await expect(createProvider(noClassify as never, 'fake-a', {}, {})).rejects.toThrow(/classify/);
    await expect(
      createProvider({ ...mod, create: () => ({}) as never }, 'fake-a', {}, {}),
    ).rejects.toThrow(/ProviderImplementation/);
  });

  it('rejects a bad name, a bad block and a bad profile, naming each', async () => {
    await expect(createProvider(mod, 'Fake_A', {}, {})).rejects.toThrow(/name: "Fake_A"/);
    await expect(createProvider(mod, 'fake-a', { size: 'x' }, {})).rejects.toThrow(
      /fake.size: must be a number/,
    );
    await expect(
      createProvider(
        { ...mod, profile: { ...profile, logging: 'none' } as never },
        'fake-a',
        {},
        {},
      ),
    ).rejects.toThrow(/fake: profile.logging/);
    await expect(createProvider(null as never, 'a', {}, {})).rejects.toThrow(TypeError);
  });
});

describe('Logger', () => {
  it('is satisfied by pino and by the silent logger', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const logger: Logger = pino({ level: 'debug' }, sink);
    logger.child({ provider: 'p' }).debug({ op: 'get' }, 'provider get succeeded');
    logger.info('plain message');
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({
      provider: 'p',
      op: 'get',
      msg: 'provider get succeeded',
    });
    const s: Logger = silentLogger;
    expect(s.child({}).debug('x')).toBeUndefined();
  });
});
