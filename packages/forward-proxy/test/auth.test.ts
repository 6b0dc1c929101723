// Peers: curl (the real client, both ways it takes proxy credentials) through the proxy program
// (spawned as a child process) to a local origin, all on 127.0.0.0/8; the password file on disk.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AWKWARD_PASSWORDS,
  authMatrix,
  basicAuthorization,
  curlThroughProxy,
  describeWithPeers,
  expectedAuthMatrix,
  replaceFile,
  runProcess,
} from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { hashPassword } from '../src/index.js';
import { proxyServerPath } from '../src/proxy-server.js';
import {
  freePort,
  killAllSpawned,
  type RunningProxy,
  rawExchange,
  startOrigin,
  startProgram,
  stopProgram,
} from './support.js';

const { afterAll, beforeAll, expect, it } = vitest;

/** The proxy listens here; only `INSIDE` may use it, `OUTSIDE` is another loopback address. */
const PROXY = '127.0.0.2';
const INSIDE = '127.0.0.1';
const OUTSIDE = '127.0.0.3';
const REALM = 'proxy-op web-0a1b';

describeWithPeers(vitest, 'Basic authentication, with curl', ['curl'], () => {
  let origin: Awaited<ReturnType<typeof startOrigin>>;
  let proxy: RunningProxy;
  let dir: string;
  const awkward = AWKWARD_PASSWORDS.map((password, i) => ({ user: `awk${i}`, password }));
  const alice = { user: 'alice', password: 'SENTINEL-3f9c-d81a-pass' };

  beforeAll(async () => {
    origin = await startOrigin();
    dir = await mkdtemp(join(tmpdir(), 'forward-proxy-auth-'));
    const passwd = join(dir, 'passwd');
    await writeFile(
      passwd,
      [`${alice.user}:${hashPassword(alice.password)}`]
        .concat(awkward.map((c) => `${c.user}:${hashPassword(c.password)}`))
        .join('\n'),
    );
    proxy = await startProgram({
      address: PROXY,
      port: await freePort(PROXY),
      allowedSources: [`${INSIDE}/32`],
      auth: { realm: REALM, passwordFile: passwd },
      // These tests refuse many credentials from one source on purpose: the bound on failures
      // per source has tests of its own (auth-bounds, front-door).
      limits: { maxAuthFailures: 10_000 },
    });
  });
  afterAll(async () => {
    await stopProgram(proxy);
    await killAllSpawned();
    origin.server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers 407 with the realm, 200 for the right credential, nothing outside the sources', async () => {
    const matrix = await authMatrix({
      proxy,
      url: `http://127.0.0.1:${origin.port}/page`,
      right: alice,
      inside: INSIDE,
      outside: OUTSIDE,
    });
    // A source outside the allowed ones is closed as it connects, before it could send a byte.
    expect(matrix).toEqual(expectedAuthMatrix(REALM, '0'));
  });

  it('takes passwords with $, :, @, %, spaces and non-ASCII, both ways curl sends them', async () => {
    for (const credential of awkward) {
      for (const form of ['option', 'url'] as const) {
        for (const tunnel of [false, true]) {
          const a = await curlThroughProxy({
            proxy,
            url: `http://127.0.0.1:${origin.port}/`,
            credential,
            form,
            tunnel,
            localAddress: INSIDE,
          });
          expect([credential.password, form, tunnel, a.status]).toEqual([
            credential.password,
            form,
            tunnel,
            200,
          ]);
        }
      }
      const wrong = { ...credential, password: credential.password.slice(1) };
      const refused = await curlThroughProxy({
        proxy,
        url: `http://127.0.0.1:${origin.port}/`,
        credential: wrong,
        localAddress: INSIDE,
      });
      expect(refused.status).toBe(407);
    }
  });

  it('never forwards Proxy-Authorization to the origin', async () => {
    // The echo origin answers with what it got; a second origin shows every header.
    const { createServer } = await import('node:http');
    let seen: Record<string, unknown> = {};
    const o = createServer((req, res) => {
      seen = req.headers;
      res.end('ok');
    });
    await new Promise<void>((r) => o.listen(0, '127.0.0.1', r));
    const port = (o.address() as { port: number }).port;
    const answer = await rawExchange(
      PROXY,
      proxy.port,
      `GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
        `Proxy-Authorization: ${basicAuthorization(alice)}\r\nConnection: close\r\n\r\n`,
      { localAddress: INSIDE },
    );
    o.close();
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(Object.keys(seen)).not.toContain('proxy-authorization');
  });

  it('refuses credentials that are not Basic, or not user:password', async () => {
    const url = `http://127.0.0.1:${origin.port}/`;
    for (const value of [
      `Bearer ${Buffer.from(`alice:${alice.password}`).toString('base64')}`,
      `Basic ${Buffer.from(alice.password).toString('base64')}`,
      `Basic ${Buffer.from(`:${alice.password}`).toString('base64')}`,
      'Basic !!!',
      'Basic',
    ]) {
      const answer = await rawExchange(
        PROXY,
        proxy.port,
        `GET ${url} HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${value}\r\n\r\n`,
        { localAddress: INSIDE },
      );
      expect(answer, value).toMatch(/^HTTP\/1\.1 407 /);
      expect(answer).toContain(`\r\nProxy-Authenticate: Basic realm="${REALM}"\r\n`);
    }
    // The scheme is case-insensitive (RFC 9110 §11.1).
    const lower = basicAuthorization(alice).replace('Basic', 'basic');
    const answer = await rawExchange(
      PROXY,
      proxy.port,
      `GET ${url} HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${lower}\r\nConnection: close\r\n\r\n`,
      { localAddress: INSIDE },
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('logs the user, never the password or the header, in the access log or on stderr', async () => {
    await curlThroughProxy({
      proxy,
      url: `http://127.0.0.1:${origin.port}/logged`,
      credential: alice,
      localAddress: INSIDE,
    });
    await curlThroughProxy({
      proxy,
      url: `http://127.0.0.1:${origin.port}/logged`,
      credential: alice,
      tunnel: true,
      localAddress: INSIDE,
    });
    const wrong = { user: alice.user, password: `${alice.password}x` };
    await curlThroughProxy({
      proxy,
      url: `http://127.0.0.1:${origin.port}/refused`,
      credential: wrong,
      localAddress: INSIDE,
    });
    // The log is written within 100 ms; wait for the refused request's line.
    let log = '';
    for (let i = 0; i < 100 && !log.includes('/refused'); i++) {
      await new Promise((r) => setTimeout(r, 50));
      log = await readFile(proxy.accessLog, 'utf8');
    }
    const lines = log
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.find((l) => l.target === `http://127.0.0.1:${origin.port}/logged`)).toMatchObject({
      user: 'alice',
      status: 200,
    });
    expect(lines.find((l) => l.method === 'CONNECT' && l.status === 200)).toMatchObject({
      user: 'alice',
    });
    expect(lines.find((l) => l.target === `http://127.0.0.1:${origin.port}/refused`)).toEqual(
      expect.objectContaining({ status: 407 }),
    );
    const everything = `${log}\n${proxy.stderr()}`;
    for (const secret of [
      alice.password,
      `${alice.password}x`,
      encodeURIComponent(alice.password),
      basicAuthorization(alice).slice(6),
      basicAuthorization(wrong).slice(6),
      Buffer.from(alice.password).toString('base64'),
      Buffer.from(alice.password).toString('hex'),
    ]) {
      expect(everything).not.toContain(secret);
    }
  });
});

describeWithPeers(vitest, 'the program with a password file it cannot read', ['curl'], () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forward-proxy-auth-file-'));
  });
  afterAll(async () => {
    await killAllSpawned();
    await rm(dir, { recursive: true, force: true });
  });

  it('exits 2 at start, naming the path', async () => {
    const config = join(dir, 'proxy.json');
    const passwordFile = join(dir, 'missing.passwd');
    await writeFile(
      config,
      JSON.stringify({
        name: 'x',
        address: INSIDE,
        port: 0,
        allowedSources: [`${INSIDE}/32`],
        auth: { realm: 'r', passwordFile },
      }),
    );
    const run = await runProcess(process.execPath, [proxyServerPath(), '--config', config]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`auth.passwordFile: cannot read ${passwordFile} (ENOENT)`);
  });

  it('refuses everyone once the file vanishes, and serves again once it is back', async () => {
    const origin = await startOrigin();
    const passwd = join(dir, 'vanishing.passwd');
    const bob = { user: 'bob', password: 'SENTINEL-vanish-51e0' };
    const line = `${bob.user}:${hashPassword(bob.password)}\n`;
    await writeFile(passwd, line);
    const proxy = await startProgram({
      address: PROXY,
      port: await freePort(PROXY),
      allowedSources: [`${INSIDE}/32`],
      auth: { realm: 'r', passwordFile: passwd, credentialsTtlMs: 60_000 },
    });
    try {
      const url = `http://127.0.0.1:${origin.port}/`;
      const get = () => curlThroughProxy({ proxy, url, credential: bob, localAddress: INSIDE });
      expect((await get()).status).toBe(200);
      await rm(passwd);
      let status = 200;
      for (let i = 0; i < 100 && status === 200; i++) {
        await new Promise((r) => setTimeout(r, 50));
        status = (await get()).status;
      }
      expect(status).toBe(407); // the kept verification does not outlive the file
      await replaceFile(passwd, line);
      for (let i = 0; i < 100 && status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 50));
        status = (await get()).status;
      }
      expect(status).toBe(200);
      expect(proxy.stderr()).toContain(`password file ${passwd} cannot be read (ENOENT)`);
      expect(proxy.stderr()).not.toContain(bob.password);
    } finally {
      await stopProgram(proxy);
      origin.server.close();
    }
  });
});
