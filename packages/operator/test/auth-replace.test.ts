// Peers: the local provider's real proxy processes on 127.0.81.0/24, as a provider that cannot
// change a running proxy's credentials (its updateAuth taken away, profile credentialRotation:
// replace), probed with their credential against the operator's own whoami target; curl and
// keep-alive clients that follow the kept URL as the users; the operator in process.
import { providerModule as local } from '@proxy-op/provider-local';
import { curlThroughProxy, startCredentialLoop } from '@proxy-op/testkit';
import { describe, expect, it } from 'vitest';
import { getCondition } from '../src/api/conditions.js';
import { instanceName } from '../src/api/naming.js';
import { ProviderRegistry } from '../src/providers/registry.js';
import { type ProbeRig, proxyPids, rigSuite } from './probe-support.js';

/** The local provider as a `replace` provider: no updateAuth, so a rotation needs a new instance. */
const replacing = {
  ...local,
  type: 'local-replace',
  profile: { ...local.profile, credentialRotation: 'replace' },
  create: (name: string, config: never, deps: never) => {
    const { updateAuth: _, ...impl } = local.create(name, config, deps);
    return impl;
  },
} as unknown as Parameters<ProviderRegistry['register']>[0];

const suite = rigSuite({
  addressRange: '127.0.81.0/24',
  type: 'local-replace',
  registry: new ProviderRegistry().register(replacing),
  local: 'timeouts: { credentialsTtlMs: 300 }',
});
const start = () => suite.start();

const status = (r: ProbeRig) => r.store.get('default/web')?.status;
const kept = (r: ProbeRig) => r.credentials.kept.get('memory:default/web');
/** The proxy address and credential of the kept URL, as a client reading the Secret gets them. */
const fromUrl = (r: ProbeRig) => {
  const u = new URL(kept(r)?.url ?? 'http://x:y@0.0.0.0:0');
  return {
    proxy: { address: u.hostname, port: Number(u.port) },
    credential: { user: decodeURIComponent(u.username), password: decodeURIComponent(u.password) },
  };
};

describe('credentials rotated make-before-break on a provider that cannot change them in place', () => {
  it('a client loop that follows the kept URL never fails; the old instance serves the old credential through the overlap, then goes', async () => {
    const r = await start();
    r.apply('web', { auth: { rotateEvery: '4s', overlap: '2s' } });
    await r.until(() => status(r)?.phase === 'Ready' && kept(r)?.url !== undefined);
    const first = status(r);
    const firstUrl = fromUrl(r);
    expect(getCondition(first?.conditions, 'Credentials')?.reason).toBe('Generated');
    const loop = startCredentialLoop({
      proxy: () => fromUrl(r).proxy,
      url: suite.origin(),
      concurrency: 6,
      credential: () => fromUrl(r).credential,
    });
    // The Proxy's phase and Ready condition, sampled through the whole rotation.
    const phases = new Set<string>();
    const sampler = setInterval(() => {
      const s = status(r);
      phases.add(`${s?.phase} ${getCondition(s?.conditions, 'Ready')?.status}`);
    }, 10);
    // The successor is made, verified with the next credential, and takes over.
    await r.until(() => status(r)?.credentials?.retiring !== undefined, 30_000);
    const during = status(r);
    expect(during?.providerID).not.toBe(first?.providerID);
    expect(during?.endpoint).not.toBe(first?.endpoint);
    expect(during?.credentials?.retiring?.providerID).toBe(first?.providerID);
    expect(during?.credentials?.slot).toBe(1);
    expect(during?.providerID).toContain(instanceName('default', 'web', 1));
    expect(getCondition(during?.conditions, 'Credentials')?.reason).toBe('Rotating');
    expect(during?.phase).toBe('Ready');
    const second = fromUrl(r);
    expect(second.credential.user).not.toBe(firstUrl.credential.user);
    // Through the overlap, the old instance still lets the old credential in; the new one never did.
    const oldOnOld = await curlThroughProxy({
      proxy: firstUrl.proxy,
      url: suite.origin(),
      credential: firstUrl.credential,
    });
    expect(oldOnOld.status).toBe(200);
    const oldOnNew = await curlThroughProxy({
      proxy: second.proxy,
      url: suite.origin(),
      credential: firstUrl.credential,
    });
    expect(oldOnNew.status).toBe(407);
    // After the overlap the old instance is deleted and the previous credential dropped.
    await r.until(
      () =>
        status(r)?.credentials?.retiring === undefined && kept(r)?.record.previous === undefined,
      20_000,
    );
    const seen = await loop.stop();
    clearInterval(sampler);
    expect([...phases]).toEqual(['Ready True']);
    expect(seen.failures).toEqual([]);
    expect(seen.ok[firstUrl.credential.user]).toBeGreaterThan(0);
    expect(seen.ok[second.credential.user]).toBeGreaterThan(0);
    expect(proxyPids(r.stateDir)).toHaveLength(1);
    const gone = await curlThroughProxy({
      proxy: firstUrl.proxy,
      url: suite.origin(),
      credential: firstUrl.credential,
    });
    expect(gone.status).not.toBe(200);
    expect(status(r)?.phase).toBe('Ready');
  }, 90_000);

  it('deleting the Proxy mid-rotation deletes the successor and the retiring instance too', async () => {
    const r = await start();
    r.apply('web', { auth: { rotateEvery: '3s', overlap: '1h' } });
    await r.until(() => status(r)?.credentials?.retiring !== undefined, 30_000);
    expect(proxyPids(r.stateDir)).toHaveLength(2);
    r.store.delete('default/web');
    await r.until(() => r.store.list().length === 0, 30_000);
    await r.until(() => proxyPids(r.stateDir).length === 0, 10_000);
  }, 60_000);
});
