// Peer: real proxy processes started by the provider (the forward proxy's Basic authentication),
// curl as the client, a real origin on 127.0.0.1, keep-alive clients during a rotation.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createProvider, isNotFound, isPermanent, type Provider } from '@proxy-op/contract';
import { hashPassword } from '@proxy-op/forward-proxy';
import {
  authMatrix,
  type Credential,
  describeWithPeers,
  expectedAuthMatrix,
  startCredentialLoop,
} from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { type LocalConfig, providerModule } from '../src/index.js';
import { killAllSpawned, removeStateDir, testConfig } from './fixture.js';
import { freePort, startOrigin } from './support.js';

const { afterAll, beforeAll, expect, it } = vitest;

const REALM = 'proxy-op default/web';
const CHALLENGE = `407 Basic realm="${REALM}"`;
const file = (...cs: Credential[]) =>
  new TextEncoder().encode(cs.map((c) => `${c.user}:${hashPassword(c.password)}\n`).join(''));

describeWithPeers(vitest, 'the local provider with credentials', ['curl'], () => {
  let config: LocalConfig;
  let provider: Provider;
  let origin: Awaited<ReturnType<typeof startOrigin>>;
  let port: number;
  const old: Credential = { user: 'web-1a2b3c', password: 'SENTINEL-old-p$ss:w@rd %20 ünï' };
  const fresh: Credential = { user: 'web-4d5e6f', password: 'SENTINEL-new-8c1f0b2e9a' };

  beforeAll(async () => {
    config = await testConfig({
      addressRange: '127.0.11.0/24',
      timeouts: { startMs: 30_000, stopMs: 3_000, probeMs: 5_000, credentialsTtlMs: 1_000 },
      // The rotation polls for a user the proxy does not know yet, from the one source the
      // keep-alive clients use too: each poll before the re-read is a failed check, and the
      // default bound (10 a burst) would answer it 429 before the new file is read.
      limits: { maxAuthFailures: 1_000 },
    });
    provider = await createProvider(providerModule, 'local-auth', config, {});
    origin = await startOrigin();
    port = await freePort('127.0.0.1');
  }, 60_000);

  afterAll(async () => {
    origin?.server.close();
    await killAllSpawned();
    if (config !== undefined) await removeStateDir(config.stateDir);
  });

  const request = (name: string, withAuth = true) => ({
    name,
    namespace: 'default',
    uid: `uid-${name}`,
    port,
    cloudInit: new Uint8Array(),
    allowedSources: ['127.0.0.1/32'],
    // The origin is on this host: the destination policy refuses it unless allowed.
    egress: { allow: [`127.0.0.1:${origin.port}`] },
    placement: {},
    ...(withAuth ? { auth: { realm: REALM, passwordFile: file(old) } } : {}),
  });

  it('asks for the credential (407), lets the right one in, closes other sources unanswered', async () => {
    const id = await provider.create(request('proxy-auth'));
    const inst = await provider.get(id);
    expect(inst.state).toBe('Running');
    const passwd = join(config.stateDir, 'proxy-auth.passwd');
    expect((await stat(passwd)).mode & 0o777).toBe(0o600);
    const matrix = await authMatrix({
      proxy: { address: inst.ip ?? '', port },
      url: `http://127.0.0.1:${origin.port}/page`,
      right: old,
      inside: '127.0.0.1',
      outside: '127.0.0.77',
    });
    // A source outside allowedSources is closed as it connects: curl reports no status (0).
    expect(matrix).toEqual(expectedAuthMatrix(REALM, '0'));
    // The state file names the password file; neither it nor the logs hold a password.
    for (const f of ['proxy-auth.json', 'proxy-auth.log', 'proxy-auth.access.log']) {
      const text = await readFile(join(config.stateDir, f), 'utf8').catch(() => '');
      expect(text, f).not.toContain('SENTINEL');
    }
  });

  it('rotates in place under load: both credentials work in the overlap, no request fails, the old one ends', async () => {
    const id = 'processes/proxy-auth';
    const inst = await provider.get(id);
    const proxy = { address: inst.ip ?? '', port };
    let using = old;
    const loop = startCredentialLoop({
      proxy,
      url: `http://127.0.0.1:${origin.port}/loop`,
      concurrency: 8,
      credential: () => using,
    });
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    await provider.updateAuth?.(id, { realm: REALM, passwordFile: file(old, fresh) });
    // The new credential works within about a second (the proxy re-reads the file).
    const right = { proxy, url: `http://127.0.0.1:${origin.port}/`, inside: '127.0.0.1' };
    for (;;) {
      const m = await authMatrix({ ...right, right: fresh, outside: '127.0.0.77' });
      if (m['GET, the right credential, --proxy-user'] === '200') break;
      // A hang detector: the re-read comes a second apart, a loaded machine stretches it.
      if (Date.now() - t0 > 30_000) throw new Error('the new credential was not taken in 30 s');
    }
    const tookMs = Date.now() - t0;
    using = fresh;
    // The clients' requests that still carry the old credential finish before it goes.
    await loop.drain();
    await new Promise((r) => setTimeout(r, 100));
    const t1 = Date.now();
    await provider.updateAuth?.(id, { realm: REALM, passwordFile: file(fresh) });
    await new Promise((r) => setTimeout(r, 300));
    const seen = await loop.stop();
    expect(seen.failures).toEqual([]);
    expect(seen.ok[old.user]).toBeGreaterThan(0);
    expect(seen.ok[fresh.user]).toBeGreaterThan(0);
    // Once the proxy has read the file again (at most a second apart) the old credential is
    // refused; what it verified before is dropped with its line, not kept for the TTL.
    let after = '';
    while (Date.now() - t1 < 30_000) {
      after = (await authMatrix({ ...right, right: old, outside: '127.0.0.77' }))[
        'GET, the right credential, --proxy-user'
      ] as string;
      if (after === CHALLENGE) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(after).toBe(CHALLENGE);
    const endedMs = Date.now() - t1;
    console.log(
      `local rotation: the new credential taken ${tookMs} ms after updateAuth, the old one refused ${endedMs} ms after its removal`,
    );
  }, 120_000);

  it('refuses updateAuth for an instance started without credentials (Permanent) and a gone one (NotFound)', async () => {
    const id = await provider.create(request('proxy-open', false));
    const err = await provider
      .updateAuth?.(id, { realm: REALM, passwordFile: file(old) })
      .catch((e) => e);
    expect(isPermanent(err)).toBe(true);
    expect((err as Error).message).toContain('without authentication');
    const gone = await provider
      .updateAuth?.('processes/proxy-none', { realm: REALM, passwordFile: file(old) })
      .catch((e) => e);
    expect(isNotFound(gone)).toBe(true);
    await provider.delete(id);
  });

  it('removes the password file with the instance', async () => {
    await provider.delete('processes/proxy-auth');
    await expect(stat(join(config.stateDir, 'proxy-auth.passwd'))).rejects.toThrow(/ENOENT/);
  });
});
