// Peer: none (in-process). Proxy credentials in the contract (§4.20): `request.auth`, the
// optional `updateAuth` operation through the shell and `observe`, and the profile's choice.
import { describe, expect, it } from 'vitest';
import {
  bindOperations,
  createProvider,
  credentialRotationOf,
  idFormat,
  isPermanent,
  type Profile,
  type ProviderModule,
  type ProxyAuth,
  profileProblems,
} from '../src/index.js';
import { telemetry } from './telemetry.js';

const profile = {
  readiness: 'immediate',
  createReturn: 'blocking',
  deleteReturn: 'waits',
  ipSource: 'assigned-at-create',
  gcMark: 'written-metadata',
  createdAt: 'written-at-create',
  listPartial: 'single-call',
  quota: 'absent',
  notFound: 'error-code',
  primaryKey: 'name-is-key',
  provisioningState: 'create-blocks',
  asyncOps: [],
  secondaryResources: 'none',
  credentials: 'none',
  clientKind: 'in-process',
  timeouts: 'signal-only',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'local-peer',
} satisfies Profile;

const ids = idFormat(['boxes', ':name']);
const FILE = new TextEncoder().encode('u1:$6$saltsaltsaltsalt$not-a-real-hash\n');
const AUTH: ProxyAuth = { realm: 'proxy-op default/web', passwordFile: FILE };

interface Box {
  readonly files: Map<string, Uint8Array>;
  readonly seen: string[];
}

function boxes(p: Profile, withUpdate: boolean): ProviderModule<object, object, { name: string }> {
  const rt: Box = { files: new Map(), seen: [] };
  return {
    type: 'boxes',
    configSchema: { '~standard': { version: 1, vendor: 'test', validate: () => ({ value: {} }) } },
    profile: p,
    classify: () => 'Transient',
    create: () =>
      bindOperations(rt, {
        ids,
        lockKey: (id) => id.name,
        operations: {
          async createInstance(r, req) {
            if (req.auth !== undefined) r.files.set(req.name, req.auth.passwordFile);
            return ids.format({ name: req.name });
          },
          getInstance: async (_r, id) => ({
            id: ids.format(id),
            uid: '',
            createdAt: new Date(0),
          }),
          deleteInstance: async () => {},
          listInstances: async () => [],
          ...(withUpdate
            ? {
                async updateInstanceAuth(r: Box, id: { name: string }, auth: ProxyAuth, ctx) {
                  r.seen.push(`${ctx.op} ${id.name} ${auth.realm}`);
                  if (!r.files.has(id.name)) throw ctx.notFound(`no box ${id.name}`);
                  r.files.set(id.name, auth.passwordFile);
                },
              }
            : {}),
        },
      }),
  };
}

const request = {
  name: 'web',
  namespace: 'default',
  uid: 'u-1',
  port: 3128,
  cloudInit: new Uint8Array(),
  placement: {},
};

describe('§4.20 credential rotation in the profile', () => {
  it('reads a profile without the axis as replace, and names a bad choice', () => {
    expect(credentialRotationOf(profile)).toBe('replace');
    expect(credentialRotationOf({ ...profile, credentialRotation: 'in-place' })).toBe('in-place');
    expect(profileProblems(profile)).toEqual([]);
    expect(profileProblems({ ...profile, credentialRotation: 'hot' })).toEqual([
      'profile.credentialRotation: must be one of in-place, replace',
    ]);
  });

  it('refuses a module that declares in-place rotation without updateAuth', async () => {
    const mod = boxes({ ...profile, credentialRotation: 'in-place' }, false);
    await expect(createProvider(mod, 'b', {}, {})).rejects.toThrow(
      /credentialRotation: in-place, so its implementation must have updateAuth/,
    );
  });

  it('gives a provider without in-place rotation no updateAuth', async () => {
    const p = await createProvider(boxes(profile, false), 'b', {}, {});
    expect(p.updateAuth).toBeUndefined();
  });
});

describe('request.auth and updateAuth through the shell', () => {
  it('passes the password file to create and to updateAuth, under the instance lock, with a span', async () => {
    const t = telemetry();
    const tracer = t.tracer;
    const p = await createProvider(
      boxes({ ...profile, credentialRotation: 'in-place' }, true),
      'b',
      {},
      { tracer },
    );
    const id = await p.create({ ...request, auth: AUTH });
    const next = new TextEncoder().encode('u2:$6$othersaltothers$also-not-real\n');
    await p.updateAuth?.(id, { realm: AUTH.realm, passwordFile: next });
    const spans = t.spans().map((s) => s.name);
    expect(spans).toEqual(['provider.create', 'provider.updateAuth']);
    const attrs = JSON.stringify(t.spans().map((s) => s.attributes));
    expect(attrs).not.toContain('u2:');
    expect(attrs).not.toContain('$6$');
  });

  it('answers NotFound from updateAuth for a gone instance, and Permanent for a malformed ID', async () => {
    const p = await createProvider(
      boxes({ ...profile, credentialRotation: 'in-place' }, true),
      'b',
      {},
      {},
    );
    const gone = await p.updateAuth?.('boxes/none', AUTH).catch((e: unknown) => e);
    expect(gone).toMatchObject({ errorClass: 'NotFound', op: 'updateAuth', provider: 'b' });
    const bad = await p.updateAuth?.('crates/x', AUTH).catch((e: unknown) => e);
    expect(isPermanent(bad)).toBe(true);
    expect((bad as Error).message).toContain('boxes/<name>');
  });

  it('refuses a bad realm or an empty file before any backend call, naming the field and never the file', async () => {
    const p = await createProvider(
      boxes({ ...profile, credentialRotation: 'in-place' }, true),
      'b',
      {},
      {},
    );
    for (const realm of ['', 'say "hi"', 'back\\slash', 'new\nline', 'x'.repeat(201)]) {
      const err = await p
        .create({ ...request, auth: { realm, passwordFile: FILE } })
        .catch((e) => e);
      expect(isPermanent(err), realm).toBe(true);
      expect((err as Error).message).toContain('request.auth.realm');
    }
    const empty = await p
      .updateAuth?.('boxes/web', { realm: 'r', passwordFile: new Uint8Array() })
      .catch((e: unknown) => e);
    expect(isPermanent(empty)).toBe(true);
    expect((empty as Error).message).toContain('auth.passwordFile is empty');
    const wrongType = await p
      .create({ ...request, auth: { realm: 'r', passwordFile: 'u:h' as unknown as Uint8Array } })
      .catch((e: unknown) => e);
    expect(wrongType).toBeInstanceOf(TypeError);
    expect((wrongType as Error).message).toBe(
      'create: request.auth.passwordFile must be a Uint8Array',
    );
    const secretish = await p
      .create({ ...request, auth: { realm: 'x"', passwordFile: FILE } })
      .catch((e: unknown) => e);
    // An Error's own fields do not serialise: look at its message, its stack and its cause chain.
    expect(isPermanent(secretish)).toBe(true);
    const e = secretish as Error & { cause?: unknown };
    const seen = [e.message, e.stack ?? '', String(e.cause ?? ''), JSON.stringify(e)].join('\n');
    expect(seen).toContain('request.auth.realm');
    expect(seen).not.toContain('$6$');
    expect(seen).not.toContain('not-a-real-hash');
  });
});
