// Peers: the local provider's real proxy processes (the forward proxy with Basic authentication)
// on 127.0.79.0/24, probed with their credential against the operator's own whoami target;
// curl and keep-alive clients as the users; the operator in process over a memory store.
import { curlThroughProxy, startCredentialLoop } from '@proxy-op/testkit';
import { describe, expect, it } from 'vitest';
import { getCondition } from '../src/api/conditions.js';
import { type ProbeRig, rigSuite } from './probe-support.js';

const suite = rigSuite({ addressRange: '127.0.79.0/24' });
const start = suite.start;

const status = (r: ProbeRig, name = 'web') => r.store.get(`default/${name}`)?.status;
const kept = (r: ProbeRig, name = 'web') => r.credentials.kept.get(`memory:default/${name}`);
const endpointOf = (r: ProbeRig, name = 'web') => {
  const u = new URL(status(r, name)?.endpoint ?? 'http://0.0.0.0:0');
  return { address: u.hostname, port: Number(u.port) };
};

describe('credentials on the local provider’s real proxies', () => {
  it('gives a new Proxy a generated credential: Ready through a probe that sends it, 407 without it, 200 with its URL', async () => {
    const r = await start();
    r.apply('web');
    await r.until(() => status(r)?.phase === 'Ready');
    const st = status(r);
    expect(getCondition(st?.conditions, 'Credentials')).toMatchObject({
      status: 'True',
      reason: 'Generated',
    });
    expect(st?.credentials?.secretName).toBe('memory:default/web');
    // The probe checked that a request without credentials is refused.
    expect(r.operator.probes?.history('default/web').at(-1)?.ok).toBe(true);
    const stored = kept(r);
    const url = new URL(stored?.url ?? '');
    expect(`${url.protocol}//${url.host}`).toBe(st?.endpoint);
    const password = decodeURIComponent(url.password);
    expect(password.length).toBeGreaterThanOrEqual(32);
    const proxy = endpointOf(r);
    const none = await curlThroughProxy({ proxy, url: suite.origin() });
    expect(none.status).toBe(407);
    expect(none.challenge).toBe('Basic realm="proxy-op default/web"');
    const right = await curlThroughProxy({
      proxy,
      url: suite.origin(),
      credential: { user: decodeURIComponent(url.username), password },
      form: 'url',
    });
    expect(right.status).toBe(200);
    // The password is nowhere in the status or the Events.
    expect(JSON.stringify(st)).not.toContain(password);
    expect(JSON.stringify(r.store.events)).not.toContain(password);
  }, 60_000);

  it('keeps a sources-only proxy with auth type none', async () => {
    const r = await start();
    r.apply('web', { auth: { type: 'none' } });
    await r.until(() => status(r)?.phase === 'Ready');
    expect(status(r)?.credentials).toBeUndefined();
    expect(kept(r)).toBeUndefined();
    expect((await curlThroughProxy({ proxy: endpointOf(r), url: suite.origin() })).status).toBe(
      200,
    );
  }, 60_000);

  it('rotates in place under load: clients that follow the kept credential never fail, the old one ends after the overlap', async () => {
    const r = await start({ local: 'timeouts: { credentialsTtlMs: 300 }' });
    r.apply('web', { auth: { rotateEvery: '4s', overlap: '1500ms' } });
    await r.until(() => status(r)?.phase === 'Ready');
    const first = kept(r)?.record.current;
    if (first === undefined) throw new Error('no credential');
    // Clients that read the credential the operator hands out, as a user reading the Secret would.
    const loop = startCredentialLoop({
      proxy: endpointOf(r),
      url: suite.origin(),
      concurrency: 6,
      credential: () => {
        const c = kept(r)?.record.current ?? first;
        return { user: c.username, password: c.password };
      },
    });
    await r.until(() => status(r)?.credentials?.overlapUntil !== undefined, 20_000);
    expect(kept(r)?.record.previous?.username).toBe(first.username);
    expect(getCondition(status(r)?.conditions, 'Credentials')?.reason).toBe('Rotating');
    await r.until(() => kept(r)?.record.previous === undefined, 20_000);
    await new Promise((res) => setTimeout(res, 500));
    const seen = await loop.stop();
    expect(seen.failures).toEqual([]);
    expect(seen.ok[first.username]).toBeGreaterThan(0);
    const second = kept(r)?.record.current;
    expect(second?.username).not.toBe(first.username);
    expect(seen.ok[second?.username ?? '']).toBeGreaterThan(0);
    // The proxy reads its file again within a second and keeps a verification for its TTL.
    const dropped = Date.now();
    let old = 0;
    while (Date.now() - dropped < 5_000) {
      old = (
        await curlThroughProxy({
          proxy: endpointOf(r),
          url: suite.origin(),
          credential: { user: first.username, password: first.password },
        })
      ).status;
      if (old === 407) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    expect(old).toBe(407);
    expect(status(r)?.phase).toBe('Ready');
  }, 60_000);

  it('keeps a Proxy made before credentials existed without them, until its spec changes', async () => {
    const r = await start();
    r.apply('web', { auth: { type: 'none' } });
    await r.until(() => status(r)?.phase === 'Ready');
    const before = status(r)?.specHash;
    // The manifest loses its auth block, as a Proxy written before spec.auth reads.
    r.apply('web', {});
    await new Promise((res) => setTimeout(res, 800));
    expect(status(r)?.specHash).toBe(before);
    expect(status(r)?.credentials).toBeUndefined();
    // Any spec change replaces the instance, and the new one has credentials.
    r.apply('web', { allowedSources: ['127.0.0.0/8', '10.0.0.0/8'] });
    await r.until(() => status(r)?.phase === 'Ready' && status(r)?.credentials !== undefined);
    expect(status(r)?.specHash).not.toBe(before);
    expect((await curlThroughProxy({ proxy: endpointOf(r), url: suite.origin() })).status).toBe(
      407,
    );
  }, 60_000);

  it('waits, naming the Secret, when spec.auth.secretRef cannot be used, and uses it once it can', async () => {
    const r = await start();
    r.apply('web', { auth: { secretRef: { name: 'mine' } } });
    await r.until(() => getCondition(status(r)?.conditions, 'Ready')?.reason === 'SecretInvalid');
    expect(getCondition(status(r)?.conditions, 'Ready')?.message).toBe(
      'Secret default/mine (spec.auth.secretRef) does not exist',
    );
    expect(status(r)?.providerID).toBeUndefined();
    // An empty password is refused as the Secret store refuses it, naming the key.
    r.credentials.refs.set('default/mine', { username: 'me', password: '' });
    r.apply('web', { auth: { secretRef: { name: 'mine' } }, port: 3130 });
    await r.until(
      () =>
        getCondition(status(r)?.conditions, 'Ready')?.message ===
        'Secret default/mine (spec.auth.secretRef) has an empty password (key password)',
    );
    expect(status(r)?.providerID).toBeUndefined();
    r.credentials.refs.set('default/mine', { username: 'me', password: 'p$ss:w@rd %20 ünï' });
    r.apply('web', { auth: { secretRef: { name: 'mine' } }, port: 3129 });
    await r.until(() => status(r)?.phase === 'Ready');
    const got = await curlThroughProxy({
      proxy: endpointOf(r),
      url: suite.origin(),
      credential: { user: 'me', password: 'p$ss:w@rd %20 ünï' },
      form: 'url',
    });
    expect(got.status).toBe(200);
    expect(status(r)?.credentials?.secretName).toBe('mine');
  }, 60_000);
});
