// Peers: @proxy-op/forward-proxy, in process and as its program (a child process), in front of
// the real whoami target; every address on 127.0.0.0/8.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ForwardProxy,
  hashPassword,
  probeHealth,
  proxyServerPath,
  startForwardProxy,
} from '@proxy-op/forward-proxy';
import { freePort, SpawnedPrograms } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probe } from '../src/probe.js';
import type { ProbeTargetSpec } from '../src/types.js';
import { startWhoami, type Whoami } from '../src/whoami.js';
import { until } from './support.js';

let whoami: Whoami;
let proxy: ForwardProxy;

beforeAll(async () => {
  whoami = await startWhoami();
  proxy = await startForwardProxy({
    name: 'in-process',
    address: '127.0.71.10',
    port: 0,
    allowedSources: ['127.0.0.1/32'],
    // A source that may ask /healthz only: the proxy answers it 403 (others it closes unanswered).
    healthSources: ['127.0.71.99/32'],
    outgoingAddress: '127.0.71.10',
    // The whoami target is on loopback, which the proxy refuses unless allowed.
    egress: { allow: ['127.0.0.0/8:1-65535'] },
  });
});

afterAll(async () => {
  await proxy?.close(0);
  await whoami?.close();
});

describe('through the forward proxy in process', () => {
  it('passes both checks, every step, with the egress address the target saw', async () => {
    const r = await probe(`http://127.0.71.10:${proxy.address.port}`, whoami.target());
    expect(r.failure).toBeUndefined();
    expect(r.ok).toBe(true);
    expect(r.steps.map((s) => `${s.check}.${s.step}:${s.ok}`)).toEqual([
      'get.connect:true',
      'get.status:true',
      'get.nonce:true',
      'connect.connect:true',
      'connect.tunnel:true',
      'connect.status:true',
      'connect.nonce:true',
    ]);
    expect(r.egressIP).toBe('127.0.71.10');
    expect(r.checks.map((c) => c.egressIP)).toEqual(['127.0.71.10', '127.0.71.10']);
    expect(r.steps.find((s) => s.step === 'tunnel')?.message).toMatch(/TLS inside the tunnel/);
    expect(r.latency.connectMs).toBeGreaterThanOrEqual(0);
    expect(r.latency.firstByteMs).toBeGreaterThanOrEqual(r.latency.connectMs ?? 0);
    expect(r.latency.totalMs).toBeGreaterThanOrEqual(r.latency.firstByteMs ?? 0);
    // Two checks, one answer each, on their own connections: all closed again.
    expect(whoami.answered).toBeGreaterThanOrEqual(2);
    await until(() => proxy.connections() === 0);
  });

  it('plain HTTP inside the tunnel when the target has no https: URL', async () => {
    const r = await probe(`http://127.0.71.10:${proxy.address.port}`, whoami.http);
    expect(r.ok).toBe(true);
    expect(r.steps.find((s) => s.step === 'tunnel')?.message).not.toMatch(/TLS/);
  });

  it('checks the TLS inside the tunnel: pinned, against a CA, by the system’s list, or not at all', async () => {
    const at = `http://127.0.71.10:${proxy.address.port}`;
    const { get, connect } = whoami.target();
    const tunnel = async (target: ProbeTargetSpec) =>
      (await probe(at, target)).steps.find((s) => s.step === 'tunnel');
    expect(await tunnel({ get, connect, tls: { ca: whoami.certificate } })).toMatchObject({
      ok: true,
    });
    expect(await tunnel({ get, connect, tls: { verify: false } })).toMatchObject({ ok: true });
    const other = await tunnel({ get, connect, tls: { fingerprint256: 'AB'.repeat(32) } });
    expect(other?.ok).toBe(false);
    expect(other?.message).toMatch(/is not the one pinned/);
    // Node's own CA list does not know a self-signed certificate.
    const unknown = await tunnel({ get, connect });
    expect(unknown?.ok).toBe(false);
    expect(unknown?.message).toMatch(/^TLS inside the tunnel failed: /);
  });

  it('fails at the GET status with the 403 of a source the proxy refuses, and stops there for CONNECT too', async () => {
    const r = await probe(`http://127.0.71.10:${proxy.address.port}`, whoami.target(), {
      localAddress: '127.0.71.99',
    });
    expect(r.ok).toBe(false);
    expect(r.failure).toEqual({
      check: 'get',
      step: 'status',
      message: 'the proxy answered 403 Forbidden',
    });
    const tunnel = r.steps.find((s) => s.step === 'tunnel');
    expect(tunnel).toMatchObject({ ok: false, status: 403 });
    expect(r.egressIP).toBeUndefined();
  });

  it('fails at connect when nothing listens, and runs no further check', async () => {
    const port = await freePort('127.0.71.11');
    const r = await probe({ host: '127.0.71.11', port }, whoami.target());
    expect(r.failure?.check).toBe('get');
    expect(r.failure?.step).toBe('connect');
    expect(r.failure?.message).toMatch(/ECONNREFUSED/);
    expect(r.steps).toHaveLength(1);
  });

  it('with a credential, fails the auth check: this proxy asks for none', async () => {
    const r = await probe(`http://127.0.71.10:${proxy.address.port}`, whoami.target(), {
      credentials: { username: 'probe', password: 'pr0be-SECRET' },
    });
    expect(r.checks.map((c) => `${c.check}:${c.ok}`)).toEqual([
      'get:true',
      'connect:true',
      'auth:false',
    ]);
    expect(r.failure).toMatchObject({ check: 'auth', step: 'auth' });
    expect(r.failure?.message).toMatch(/answered 200 OK, not 407/);
    const text = JSON.stringify(r);
    expect(text).not.toContain('pr0be-SECRET');
    expect(text).not.toContain(Buffer.from('probe:pr0be-SECRET').toString('base64'));
  });
});

describe('the SOCKS5 check, through the forward proxy on the same port', () => {
  let dir: string;
  let locked: ForwardProxy;
  let narrow: ForwardProxy;
  const user = { username: 'probe', password: 'pr0be-SOCKS-secret' };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'probe-socks5-'));
    const file = join(dir, 'passwd');
    await writeFile(file, `${user.username}:${hashPassword(user.password)}\n`, { mode: 0o600 });
    locked = await startForwardProxy({
      name: 'locked',
      address: '127.0.71.20',
      port: 0,
      allowedSources: ['127.0.0.1/32'],
      outgoingAddress: '127.0.71.20',
      auth: { realm: 'probe', passwordFile: file },
      egress: { allow: ['127.0.0.0/8:1-65535'] },
    });
    // Lets the GET's port through but not the tunnel's: the SOCKS5 CONNECT is refused by policy.
    narrow = await startForwardProxy({
      name: 'narrow',
      address: '127.0.71.21',
      port: 0,
      allowedSources: ['127.0.0.1/32'],
      egress: { allow: [`127.0.0.0/8:${whoami.http.port}`] },
    });
  });

  afterAll(async () => {
    await locked?.close(0);
    await narrow?.close(0);
    await rm(dir, { recursive: true, force: true });
  });

  it('opens a SOCKS5 tunnel to the target, TLS inside, and reads the nonce through it', async () => {
    const r = await probe(`http://127.0.71.10:${proxy.address.port}`, whoami.target(), {
      socks5: true,
    });
    expect(r.failure).toBeUndefined();
    const socks = r.checks.find((c) => c.check === 'socks5');
    expect(socks?.steps.map((s) => `${s.step}:${s.ok}`)).toEqual([
      'connect:true',
      'tunnel:true',
      'status:true',
      'nonce:true',
    ]);
    expect(socks?.egressIP).toBe('127.0.71.10');
    expect(socks?.steps[1]?.message).toMatch(
      /^SOCKS5 CONNECT 127\.0\.0\.1:\d+ succeeded; TLS inside/,
    );
    expect(socks?.latency.firstByteMs).toBeGreaterThan(0);
  });

  it('gives the credential as the SOCKS5 user name and password, and names a refused one', async () => {
    const at = `http://127.0.71.20:${locked.address.port}`;
    const good = await probe(at, whoami.target(), { socks5: true, credentials: user });
    expect(good.checks.map((c) => `${c.check}:${c.ok}`)).toEqual([
      'get:true',
      'connect:true',
      'socks5:true',
      'auth:true',
    ]);
    const bad = await probe(at, whoami.target(), {
      socks5: true,
      credentials: { username: 'probe', password: 'not-it-SECRET' },
    });
    const socks = bad.checks.find((c) => c.check === 'socks5');
    // The GET fails first with 407; the SOCKS5 check still runs, since the proxy answered.
    expect(socks?.steps[1]).toMatchObject({ step: 'tunnel', ok: false });
    expect(socks?.steps[1]?.message).toBe('the proxy refused the SOCKS5 user name and password');
    const none = await probe(at, { connect: whoami.target().connect }, { socks5: true });
    expect(none.checks.find((c) => c.check === 'socks5')?.steps[1]?.message).toBe(
      'the proxy wants SOCKS5 authentication and the probe has no credential',
    );
    expect(JSON.stringify([good, bad])).not.toContain('SECRET');
  });

  it('names the reply of a CONNECT the destination policy refuses', async () => {
    const r = await probe(`http://127.0.71.21:${narrow.address.port}`, whoami.target(), {
      socks5: true,
    });
    expect(r.checks.find((c) => c.check === 'get')?.ok).toBe(true);
    const socks = r.checks.find((c) => c.check === 'socks5');
    expect(socks?.ok).toBe(false);
    expect(socks?.steps[1]?.message).toMatch(
      /^SOCKS5 CONNECT 127\.0\.0\.1:\d+: the proxy answered connection not allowed by ruleset \(2\)$/,
    );
  });
});

describe('through the forward proxy program', () => {
  const spawned = new SpawnedPrograms(proxyServerPath());
  let dir = '';
  let child: ChildProcess | undefined;
  const address = '127.0.71.20';
  let port = 0;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'probe-program-'));
    port = await freePort(address);
    const config = join(dir, 'proxy.json');
    await writeFile(
      config,
      JSON.stringify({
        name: 'program',
        address,
        port,
        allowedSources: ['127.0.0.0/8'],
        outgoingAddress: address,
        egress: { allow: ['127.0.0.0/8:1-65535'] },
      }),
    );
    child = spawn(process.execPath, [proxyServerPath(), '--config', config], { stdio: 'ignore' });
    spawned.pids.add(child.pid as number);
    const deadline = Date.now() + 30_000;
    while (!(await probeHealth('program', address, port, 1_000))) {
      if (Date.now() > deadline) throw new Error('the proxy program did not start');
      await new Promise((r) => setTimeout(r, 25));
    }
  });

  afterAll(async () => {
    child?.kill('SIGTERM');
    await spawned.killAll();
    await rm(dir, { recursive: true, force: true });
  });

  it('passes, the target seeing the program’s own address', async () => {
    const r = await probe({ host: address, port }, whoami.target());
    expect(r.failure).toBeUndefined();
    expect(r.egressIP).toBe(address);
  });

  it('a stopped program (SIGSTOP) fails at the GET status within the timeout; SIGCONT, it passes again', async () => {
    process.kill(child?.pid as number, 'SIGSTOP');
    try {
      const started = Date.now();
      const r = await probe({ host: address, port }, whoami.target(), { timeoutMs: 500 });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(r.failure?.check).toBe('get');
      // The kernel still accepts the connection; nothing answers it.
      expect(['connect', 'status']).toContain(r.failure?.step);
      expect(r.failure?.message).toMatch(/timed out after 500 ms/);
    } finally {
      process.kill(child?.pid as number, 'SIGCONT');
    }
    expect((await probe({ host: address, port }, whoami.target())).ok).toBe(true);
  });
});
