// Peer: the provider's production adapter (undici, the token file) against the Hetzner Cloud API
// double on 127.0.0.1: what it sends (bodies, labels, firewall rules, user data byte for byte),
// the requests each operation makes, counted over the wire, and the behaviours the conformance
// kit does not look at: Delete's wait, the firewall's life, placement by datacenter, the token
// file, the rate limit, a server the double keeps on the real time scale.
import { rmSync } from 'node:fs';
import { isPermanent, isTransient, MarkKey } from '@proxy-op/contract';
import { createLogSink, createSpanRecorder } from '@proxy-op/providertest';
import { afterEach, describe, expect, it } from 'vitest';
import { TokenError } from '../src/errors.js';
import { firewallName } from '../src/firewall.js';
import { createHetznerFixture, type HetznerFixture } from './support/fixture.js';

let fx: HetznerFixture | undefined;
afterEach(async () => {
  await fx?.cleanup?.();
  fx = undefined;
});

async function fixture(o: Parameters<typeof createHetznerFixture>[1] = {}) {
  fx = await createHetznerFixture({}, o);
  return fx;
}

const request = (o: Record<string, unknown> = {}) => ({
  name: 'proxy-web-1',
  namespace: 'default',
  uid: '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11',
  port: 3128,
  cloudInit: new TextEncoder().encode('#cloud-config\npackages: [squid]\n'),
  placement: { region: 'fsn1', machineType: 'cx23', image: 'ubuntu-24.04' },
  installation: 'site-1',
  ...o,
});

/** The requests made while `fn` ran, without queries that carry a changing ID. */
async function requestsOf(f: HetznerFixture, fn: () => Promise<unknown>): Promise<string[]> {
  const from = f.double.requests.length;
  await fn();
  return f.double.requests.slice(from).map((r) => r.replace(/\/\d+/g, '/{id}'));
}

describe('the hetzner provider over the API double', () => {
  it('makes the requests of its README table, and no more', async () => {
    const f = await fixture();
    const p = f.provider;
    expect(await requestsOf(f, () => p.create(request()))).toEqual([
      'GET /v1/servers?name=proxy-web-1',
      'POST /v1/firewalls',
      'POST /v1/servers',
    ]);
    expect(await requestsOf(f, () => p.create(request()))).toEqual([
      'GET /v1/servers?name=proxy-web-1',
    ]);
    expect(await requestsOf(f, () => p.get('servers/proxy-web-1'))).toEqual([
      'GET /v1/servers?name=proxy-web-1',
    ]);
    expect(await requestsOf(f, () => p.listByTag({ installation: 'site-1' }))).toEqual([
      'GET /v1/servers?label_selector=proxy-operator-managed%3Dtrue&page=1&per_page=50',
    ]);
    expect(await requestsOf(f, () => p.check!())).toEqual([
      'GET /v1/locations?per_page=50',
      'GET /v1/server_types?page=1&per_page=50',
      'GET /v1/images?name=ubuntu-24.04&per_page=50',
      'GET /v1/images?name=debian-12&per_page=50',
    ]);
    const del = await requestsOf(f, () => p.delete('servers/proxy-web-1'));
    expect(del.slice(0, 2)).toEqual([
      'GET /v1/servers?name=proxy-web-1',
      'DELETE /v1/servers/{id}',
    ]);
    expect(del.slice(2, -2).every((r) => r === 'GET /v1/servers/{id}')).toBe(true);
    expect(del.slice(-2)).toEqual([
      `GET /v1/firewalls?name=${firewallName('proxy-web-1')}`,
      'DELETE /v1/firewalls/{id}',
    ]);
    expect(await requestsOf(f, () => p.delete('servers/proxy-web-1'))).toEqual([
      'GET /v1/servers?name=proxy-web-1',
      `GET /v1/firewalls?name=${firewallName('proxy-web-1')}`,
    ]);
  });

  it('creates the server with the cloud-init byte for byte, the mark as labels and its firewall', async () => {
    const f = await fixture({ config: { sshKeys: ['ops-key', '4711'] } });
    // A byte-order mark, CRLF line ends and non-ASCII text stay as they are.
    const text =
      '\uFEFF#cloud-config\r\nwrite_files: [{path: /etc/motd, content: "grüß dich"}]\r\n';
    await f.provider.create(
      request({
        cloudInit: new TextEncoder().encode(text),
        allowedSources: ['192.0.2.7', '2001:db8::/48', '192.0.2.7'],
        port: 8080,
      }),
    );
    const server = f.double.serverNamed('proxy-web-1');
    expect(server?.userData).toBe(text);
    expect(server?.labels).toEqual({
      [MarkKey.Managed]: 'true',
      [MarkKey.Uid]: '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11',
      [MarkKey.Installation]: 'site-1',
    });
    expect(server?.sshKeys).toEqual(['ops-key', 4711]);
    expect(server?.datacenter).toBe('fsn1-dc14');
    expect(server?.ipv4).toBeDefined();
    expect(server?.ipv6).toBeDefined();
    const fw = [...f.double.firewalls.values()][0];
    expect(fw?.name).toBe('proxy-op-proxy-web-1');
    expect(fw?.labels).toEqual(server?.labels);
    expect(fw?.servers).toEqual([server?.id]);
    expect(fw?.rules).toEqual([
      {
        direction: 'in',
        protocol: 'tcp',
        port: '8080',
        source_ips: ['192.0.2.7/32', '2001:db8::/48'],
        destination_ips: [],
        description: 'proxy-op: the proxy port',
      },
    ]);
  });

  it('places a server in the datacenter placement.zone names', async () => {
    const f = await fixture();
    await f.provider.create(
      request({ placement: { zone: 'nbg1-dc3', machineType: 'cpx11', image: 'debian-12' } }),
    );
    const got = await f.provider.get('servers/proxy-web-1');
    expect(got.location).toEqual({ region: 'nbg1', zone: 'nbg1-dc3', country: 'DE' });
    expect(f.double.serverNamed('proxy-web-1')?.image.name).toBe('debian-12');
  });

  it('without a firewall: no firewall is made or looked for at Create', async () => {
    const f = await fixture({ config: { firewall: { enabled: false } } });
    expect(await requestsOf(f, () => f.provider.create(request()))).toEqual([
      'GET /v1/servers?name=proxy-web-1',
      'POST /v1/servers',
    ]);
    expect(f.double.firewalls.size).toBe(0);
  });

  it('refuses before any request: no source for the firewall, cloud-init too large or not UTF-8, a UID that is no label value', async () => {
    const f = await fixture({ config: { firewall: { enabled: true } } });
    const refused = async (req: ReturnType<typeof request>) => {
      const before = f.double.requests.length;
      const err = await f.provider.create(req).catch((e) => e);
      expect(f.double.requests.length).toBe(before);
      expect(isPermanent(err)).toBe(true);
      return err.message as string;
    };
    expect(await refused(request())).toContain('names an allowed source');
    const req = request({ allowedSources: ['192.0.2.0/24'] });
    expect(await refused({ ...req, cloudInit: new Uint8Array(32 * 1024 + 1) })).toContain(
      'holds at most 32768',
    );
    expect(await refused({ ...req, cloudInit: new Uint8Array([0x23, 0xff, 0xfe]) })).toContain(
      'not UTF-8',
    );
    expect(await refused({ ...req, uid: 'uid with spaces' })).toContain('label value');
  });

  it('adopts its own firewall left by an earlier attempt, setting its rules when they changed', async () => {
    const f = await fixture();
    await f.provider.create(request({ allowedSources: ['192.0.2.0/24'] }));
    const server = f.double.serverNamed('proxy-web-1');
    f.double.removeServer(server?.id ?? 0);
    const calls = await requestsOf(f, () =>
      f.provider.create(request({ allowedSources: ['198.51.100.0/24'] })),
    );
    expect(calls).toEqual([
      'GET /v1/servers?name=proxy-web-1',
      'POST /v1/firewalls',
      `GET /v1/firewalls?name=${firewallName('proxy-web-1')}`,
      'POST /v1/firewalls/{id}/actions/set_rules',
      'POST /v1/servers',
    ]);
    expect([...f.double.firewalls.values()][0]?.rules[0]?.source_ips).toEqual(['198.51.100.0/24']);
  });

  it('refuses a firewall of someone else with the name, and makes no server', async () => {
    const f = await fixture();
    await fetch(`${f.double.url}/firewalls`, {
      method: 'POST',
      headers: { authorization: `Bearer ${[...f.double.tokens][0]}` },
      body: JSON.stringify({ name: firewallName('proxy-web-1'), labels: { team: 'web' } }),
    });
    const err = await f.provider.create(request()).catch((e) => e);
    expect(isPermanent(err)).toBe(true);
    expect(err.message).toContain(`a firewall named ${firewallName('proxy-web-1')} exists`);
    expect(f.double.servers.size).toBe(0);
  });

  it('Delete waits until the server is gone, then deletes its firewall', async () => {
    const f = await fixture({
      double: { timings: { initializingMs: 10, startingMs: 10, deleteMs: 400 } },
    });
    await f.provider.create(request());
    const start = Date.now();
    await f.provider.delete('servers/proxy-web-1');
    expect(Date.now() - start).toBeGreaterThanOrEqual(380);
    expect(f.double.servers.size).toBe(0);
    expect(f.double.firewalls.size).toBe(0);
  });

  it('Delete past deleteWaitMs is Transient, and the next Delete waits again without deleting twice', async () => {
    const f = await fixture({
      double: { timings: { initializingMs: 10, startingMs: 10, deleteMs: 600 } },
      config: { timeouts: { pollMs: 20, deleteWaitMs: 100 } },
    });
    await f.provider.create(request());
    const err = await f.provider.delete('servers/proxy-web-1').catch((e) => e);
    expect(isTransient(err)).toBe(true);
    expect(err.message).toContain('is still there (deleting)');
    const calls = await requestsOf(f, () =>
      f.provider.delete('servers/proxy-web-1').catch(() => undefined),
    );
    expect(calls).not.toContain('DELETE /v1/servers/{id}');
    f.double.settle();
    await f.provider.delete('servers/proxy-web-1');
    expect(f.double.servers.size + f.double.firewalls.size).toBe(0);
  });

  it('a server whose create failed after it was accepted reads Stopped, not NotFound', async () => {
    const f = await fixture();
    f.double.failNextCreateLater = true;
    await f.provider.create(request());
    f.double.settle();
    expect((await f.provider.get('servers/proxy-web-1')).state).toBe('Stopped');
    const failed = [...f.double.actions.values()].find((a) => a.command === 'create_server');
    expect(failed?.error).toEqual({ code: 'action_failed', message: 'Action failed' });
  });

  it('on the real time scale a new server is Provisioning for tens of seconds', async () => {
    const f = await fixture({
      double: { timings: { initializingMs: 10_000, startingMs: 15_000, deleteMs: 5_000 } },
    });
    await f.provider.create(request());
    await new Promise((r) => setTimeout(r, 500));
    const got = await f.provider.get('servers/proxy-web-1');
    expect(got.state).toBe('Provisioning');
    expect(got.ip).toBeUndefined();
    f.double.settle();
    const running = await f.provider.get('servers/proxy-web-1');
    expect(running.state).toBe('Running');
    expect(running.ip).toMatch(/^203\.0\.113\.\d+$/);
    expect(running.ipv6Range).toMatch(/::\/64$/);
  });

  it('reads the token file for every request: missing is Transient, and a new token is used at once', async () => {
    const f = await fixture();
    rmSync(f.tokenFile);
    const err = await f.provider.get('servers/proxy-web-1').catch((e) => e);
    expect(isTransient(err)).toBe(true);
    expect(TokenError.isInstance(err.cause)).toBe(true);
    expect(err.message).toContain('does not exist');
    expect((await f.provider.check!())[0]?.reason).toBe('CredentialsUnavailable');
    f.double.tokens.add('new-token-1');
    f.writeToken('new-token-1');
    await f.provider.create(request());
  });

  it('a rate-limited answer is Transient, naming the limit and when it recovers; logs keep the status', async () => {
    const logs = createLogSink();
    fx = await createHetznerFixture({ logger: logs.logger, tracer: createSpanRecorder().tracer });
    fx.double.refuseForRate(1);
    const err = await fx.provider.get('servers/proxy-web-1').catch((e) => e);
    expect(isTransient(err)).toBe(true);
    expect(err.message).toMatch(
      /limit of 3600 requests per hour reached \(rate_limit_exceeded, HTTP 429\); the rate limit of 3600 requests per hour was reached, and it recovers by \d{4}-\d\d-\d\dT/,
    );
    const line = logs.lines.find((l) => l.msg === 'hetzner call');
    expect(line?.fields).toMatchObject({
      call: 'findServer',
      httpStatus: 429,
      apiCode: 'rate_limit_exceeded',
    });
  });

  it('a server Hetzner Cloud holds locked is Transient for Get, and listed all the same', async () => {
    const f = await fixture();
    await f.provider.create(request());
    const server = f.double.serverNamed('proxy-web-1');
    if (server !== undefined) server.locked = true;
    const err = await f.provider.get('servers/proxy-web-1').catch((e) => e);
    expect(isTransient(err)).toBe(true);
    expect(err.message).toContain('locked by Hetzner Cloud');
    expect((await f.provider.listByTag({ installation: 'site-1' })).map((i) => i.id)).toEqual([
      'servers/proxy-web-1',
    ]);
  });

  it('ListByTag leaves out a marked server whose name is no provider ID', async () => {
    const f = await fixture();
    f.double.plantServer('Web.Example.com', { labels: { [MarkKey.Managed]: 'true' } });
    f.double.plantServer('proxy-a', { labels: { [MarkKey.Managed]: 'true' } });
    expect((await f.provider.listByTag()).map((i) => i.id)).toEqual(['servers/proxy-a']);
  });
});
