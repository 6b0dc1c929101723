// Peer: the real Squid (Debian `squid`) on loopback with the locked-down configuration of
// @proxy-op/squid-config, and with Basic auth by Squid's own basic_ncsa_auth; the real whoami
// target behind it.
import { describeWithPeers } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { probe } from '../src/probe.js';
import { startWhoami, type Whoami } from '../src/whoami.js';
import { startRealSquid } from './support.js';

const { afterAll, beforeAll, expect, it } = vitest;

describeWithPeers(vitest, 'through a real Squid', ['squid', 'openssl'], () => {
  let whoami: Whoami;
  let open: Awaited<ReturnType<typeof startRealSquid>>;
  let locked: Awaited<ReturnType<typeof startRealSquid>>;
  const user = { username: 'probe', password: 'sq1d-SECRET-pass' };

  beforeAll(async () => {
    whoami = await startWhoami({ host: '127.0.72.1' });
    const connectPorts = [Number(whoami.https?.port)];
    open = await startRealSquid({
      host: '127.0.72.2',
      allowedSources: ['127.0.0.1/32'],
      connectPorts,
    });
    locked = await startRealSquid({
      host: '127.0.72.3',
      allowedSources: ['127.0.0.1/32'],
      connectPorts,
      user,
    });
  }, 60_000);

  afterAll(async () => {
    await open?.stop();
    await locked?.stop();
    await whoami?.close();
  }, 30_000);

  it('passes the GET and the CONNECT with TLS inside, through Squid', async () => {
    const r = await probe({ host: '127.0.72.2', port: open.port }, whoami.target());
    expect(r.failure, open.output()).toBeUndefined();
    expect(r.ok).toBe(true);
    // Squid connects from the address the system picks for a loopback destination.
    expect(r.egressIP).toBe('127.0.0.1');
    expect(r.steps.find((s) => s.step === 'tunnel')?.message).toMatch(/TLS inside the tunnel/);
  });

  it('a SOCKS5 check fails at the tunnel: Squid does not speak SOCKS5', async () => {
    // Squid waits for the rest of a request line that never comes: the deadline ends the step.
    const r = await probe({ host: '127.0.72.2', port: open.port }, whoami.target(), {
      socks5: true,
      timeoutMs: 3_000,
    });
    expect(r.checks.map((c) => `${c.check}:${c.ok}`)).toEqual([
      'get:true',
      'connect:true',
      'socks5:false',
    ]);
    expect(r.failure).toMatchObject({ check: 'socks5', step: 'tunnel' });
    expect(r.failure?.message).toMatch(
      /^timed out after 3000 ms opening a SOCKS5 tunnel to 127\.0\.72\.1:\d+$/,
    );
  });

  it('fails at the GET status with Squid’s 403 for a source outside allowedSources', async () => {
    const r = await probe({ host: '127.0.72.2', port: open.port }, whoami.target(), {
      localAddress: '127.0.72.9',
    });
    expect(r.failure).toMatchObject({ check: 'get', step: 'status' });
    expect(r.failure?.message).toMatch(/^the proxy answered 403/);
  });

  it('fails at the tunnel when Squid refuses CONNECT to a port it does not allow', async () => {
    const r = await probe(
      { host: '127.0.72.2', port: open.port },
      {
        get: whoami.http,
        connect: whoami.http,
      },
    );
    expect(r.checks[0]?.ok).toBe(true);
    expect(r.failure).toMatchObject({ check: 'connect', step: 'tunnel' });
    expect(r.failure?.message).toMatch(/answered 403/);
  });

  it('with its credential, passes every check, the refusal without it included', async () => {
    const r = await probe({ host: '127.0.72.3', port: locked.port }, whoami.target(), {
      credentials: user,
    });
    expect(r.failure, locked.output()).toBeUndefined();
    expect(r.checks.map((c) => c.check)).toEqual(['get', 'connect', 'auth']);
    expect(r.steps.at(-1)).toMatchObject({ step: 'auth', ok: true, status: 407 });
    expect(JSON.stringify(r)).not.toContain(user.password);
  });

  it('without a credential, fails at the GET status with 407, named as such', async () => {
    const r = await probe({ host: '127.0.72.3', port: locked.port }, whoami.target());
    expect(r.failure).toMatchObject({ check: 'get', step: 'status' });
    expect(r.failure?.message).toMatch(/^the proxy asks for credentials \(407/);
  });

  it('with a wrong password, fails at the GET status with 407', async () => {
    const r = await probe({ host: '127.0.72.3', port: locked.port }, whoami.target(), {
      credentials: { username: user.username, password: 'wrong-one' },
    });
    expect(r.failure).toMatchObject({ check: 'get', step: 'status' });
    expect(r.steps[1]?.status).toBe(407);
    expect(JSON.stringify(r)).not.toContain('wrong-one');
  });
});
