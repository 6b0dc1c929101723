// Peer: real proxy processes started by the provider, a real service on 127.0.0.1 holding a
// secret (as an admin page or a database bound to loopback would), real clients on loopback.

import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createProvider, type Provider } from '@proxy-op/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalConfig, providerModule } from '../src/index.js';
import { killAllSpawned, removeStateDir, testConfig } from './fixture.js';
import { freePort, listen, tunnel, viaProxy } from './support.js';

const SECRET = 'SENTINEL-loopback-service-answer';

describe('the destination policy of local proxies', () => {
  const configs: LocalConfig[] = [];
  let provider: Provider;
  let service: Server;
  let servicePort: number;
  let port: number;
  let served = 0;

  /** A provider over a fresh state folder in its own range, with `patch` in its config. */
  async function localProvider(name: string, range: string, patch: Record<string, unknown> = {}) {
    const config = await testConfig({ addressRange: range, ...patch });
    configs.push(config);
    return createProvider(providerModule, name, config, {});
  }

  beforeAll(async () => {
    service = createServer((_req, res) => {
      served++;
      res.end(SECRET);
    });
    servicePort = await listen(service);
    port = await freePort('127.0.0.1');
    provider = await localProvider('local-egress', '127.0.13.0/24');
  }, 60_000);

  afterAll(async () => {
    service?.close();
    await killAllSpawned();
    for (const c of configs) await removeStateDir(c.stateDir);
  });

  const request = (name: string, patch: Record<string, unknown> = {}) => ({
    name,
    namespace: 'default',
    uid: `uid-${name}`,
    port,
    cloudInit: new Uint8Array(),
    allowedSources: ['127.0.0.1/32'],
    placement: {},
    ...patch,
  });

  const proxyOf = async (p: Provider, id: string) => ({
    address: (await p.get(id)).ip as string,
    port,
  });

  it('refuses a service on this host by default (403 naming the rule, none of its answer), and reaches it once the request allows it', async () => {
    const id = await provider.create(request('proxy-default'));
    const proxy = await proxyOf(provider, id);
    const before = served;
    const refused = await viaProxy(proxy, `http://127.0.0.1:${servicePort}/`);
    expect(refused).toEqual({ status: 403, body: 'proxy-op: destination refused (loopback)\n' });
    // The same service in other spellings, and through CONNECT.
    for (const host of ['127.1', '2130706433', 'localhost']) {
      const other = await viaProxy(proxy, `http://${host}:${servicePort}/`);
      expect(other.status, host).toBe(403);
      expect(other.body, host).not.toContain(SECRET);
    }
    const t = await tunnel(proxy, `127.0.0.1:${servicePort}`);
    expect(t.status).toBe(403);
    t.socket.destroy();
    expect(served, 'requests the service answered').toBe(before);

    // The same Create with the service allowed: the instance is kept (same ID, same address)
    // and its proxy restarted on the new terms.
    const allowed = request('proxy-default', { egress: { allow: [`127.0.0.1:${servicePort}`] } });
    expect(await provider.create(allowed)).toBe(id);
    expect((await proxyOf(provider, id)).address).toBe(proxy.address);
    expect(await viaProxy(proxy, `http://127.0.0.1:${servicePort}/`)).toEqual({
      status: 200,
      body: SECRET,
    });
    expect(served).toBe(before + 1);
    // Only what the entry names: another port of the host is still refused.
    expect((await viaProxy(proxy, `http://127.0.0.1:${servicePort + 1}/`)).status).toBe(403);
    const record = JSON.parse(
      await readFile(`${configs[0]?.stateDir}/proxy-default.json`, 'utf8'),
    ) as { egress?: unknown };
    expect(record.egress).toEqual({ allow: [`127.0.0.1:${servicePort}`] });
    await provider.delete(id);
  }, 60_000);

  it("takes the provider's egress when the request has none, and the request's over it", async () => {
    const configured = await localProvider('local-egress-config', '127.0.14.0/24', {
      egress: { allow: [`127.0.0.1:${servicePort}`] },
    });
    const id = await configured.create(request('proxy-configured'));
    const proxy = await proxyOf(configured, id);
    expect(await viaProxy(proxy, `http://127.0.0.1:${servicePort}/`)).toEqual({
      status: 200,
      body: SECRET,
    });
    // A request with a policy of its own: the provider's is not merged into it.
    const own = await configured.create(
      request('proxy-own', { egress: { allow: ['10.20.0.0/16'] } }),
    );
    const other = await viaProxy(
      await proxyOf(configured, own),
      `http://127.0.0.1:${servicePort}/`,
    );
    expect(other).toEqual({ status: 403, body: 'proxy-op: destination refused (loopback)\n' });
    await configured.delete(id);
    await configured.delete(own);
  }, 60_000);

  it("answers the provider's health checks when allowedSources leave out the provider's source, and no one else outside them", async () => {
    // 127.0.0.1, where local clients (the provider's own requests included) come from by
    // default, is not an allowed source: Create still sees its proxy answer, Get reads Running.
    const id = await provider.create(
      request('proxy-narrow', {
        allowedSources: ['127.0.0.150/32'],
        egress: { allow: [`127.0.0.1:${servicePort}`] },
      }),
    );
    expect((await provider.get(id)).state).toBe('Running');
    const proxy = await proxyOf(provider, id);
    const from = (localAddress: string) =>
      viaProxy(proxy, `http://127.0.0.1:${servicePort}/`, { localAddress });
    expect(await from('127.0.0.150')).toEqual({ status: 200, body: SECRET });
    await expect(from('127.0.0.1')).rejects.toMatchObject({ code: 'ECONNRESET' });
    // The health source (the proxy's own address) may ask /healthz and nothing else.
    const health = await viaProxy(proxy, '/healthz', { localAddress: proxy.address });
    expect(health).toEqual({ status: 200, body: 'ok\n' });
    const fromHealth = await from(proxy.address);
    expect(fromHealth.status).toBe(403);
    expect(fromHealth.body).not.toContain(SECRET);
    await provider.delete(id);
  }, 60_000);
});
