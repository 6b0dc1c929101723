/**
 * Clients of an authenticating proxy: `curl` with a user and password
 * given either way it takes them (`--proxy-user`, or percent-encoded in the
 * proxy URL), the matrix of answers a proxy with Basic authentication and
 * allowed sources must give, a loop of keep-alive clients that switches
 * credentials while it runs (for rotation under load), and the atomic
 * rewrite of a password file; Squid's password helper and the passwords
 * that need escaping.
 *
 * @module
 */

import { rename, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { basename, dirname, join } from 'node:path';
import { runProcess } from './process.js';

/** Squid's helper for NCSA-style password files, as Debian's `squid` installs it. */
export const NCSA_HELPER = '/usr/lib/squid/basic_ncsa_auth';

/**
 * The passwords every test of special characters uses: each needs escaping
 * somewhere on its way (in a URL, the password file, the helper's protocol).
 */
export const AWKWARD_PASSWORDS: readonly string[] = [
  'p$ss:w@rd %20 ünï',
  '$6$notahash$',
  'colon:at@percent%25',
  ' leading and trailing spaces ',
  'ключ-密码-🔑',
];

/** A user and password. */
export interface Credential {
  readonly user: string;
  readonly password: string;
}

/** What curl got: the CONNECT answer's status (0 without one), the final status, the challenge. */
export interface CurlAnswer {
  readonly connect: number;
  readonly status: number;
  /** The `Proxy-Authenticate` value of the last answer that had one. */
  readonly challenge: string | undefined;
}

/** One request by `curl` through a proxy. */
export interface CurlRequest {
  readonly proxy: { readonly address: string; readonly port: number };
  /** The URL to fetch. */
  readonly url: string;
  /** Credentials to send; none when unset. */
  readonly credential?: Credential | undefined;
  /**
   * How curl is given them: `--proxy-user user:password` (only `%` escaped,
   * as `%25`: curl decodes percent-escapes there too), or percent-encoded
   * in the proxy URL.
   */
  readonly form?: 'option' | 'url' | undefined;
  /** Through a CONNECT tunnel (`--proxytunnel`), even for an `http://` URL. */
  readonly tunnel?: boolean | undefined;
  /** The client's source address (`--interface`). */
  readonly localAddress?: string | undefined;
}

/** Fetches `url` through the proxy with curl (`curl` on PATH), never through another proxy. */
export async function curlThroughProxy(r: CurlRequest): Promise<CurlAnswer> {
  const c = r.credential;
  const userinfo =
    c !== undefined && r.form === 'url'
      ? `${encodeURIComponent(c.user)}:${encodeURIComponent(c.password)}@`
      : '';
  const args = [
    '--silent',
    '--show-error',
    '--noproxy',
    '',
    '--max-time',
    '20',
    '--proxy',
    `http://${userinfo}${r.proxy.address}:${r.proxy.port}`,
    // curl percent-decodes --proxy-user too, so a `%` there is written `%25`; nothing else is escaped.
    ...(c !== undefined && r.form !== 'url'
      ? ['--proxy-user', `${c.user.replaceAll('%', '%25')}:${c.password.replaceAll('%', '%25')}`]
      : []),
    ...(r.tunnel === true ? ['--proxytunnel'] : []),
    ...(r.localAddress === undefined ? [] : ['--interface', r.localAddress]),
    '--output',
    '/dev/null',
    '--dump-header',
    '-',
    '--write-out',
    '\n%{http_connect} %{http_code}\n',
    r.url,
  ];
  const run = await runProcess('curl', args);
  const lines = run.stdout.trimEnd().split(/\r?\n/);
  const codes = /^(\d{3}) (\d{3})$/.exec(lines.at(-1) ?? '');
  if (codes === null) throw new Error(`curl said: ${run.stderr}${run.stdout}`);
  const challenges = lines
    .map((l) => /^proxy-authenticate:\s*(.*)$/i.exec(l)?.[1])
    .filter((v) => v !== undefined);
  return { connect: Number(codes[1]), status: Number(codes[2]), challenge: challenges.at(-1) };
}

/** The proxy, the origin, and who may use the proxy, for {@link authMatrix}. */
export interface AuthMatrixSetup {
  readonly proxy: { readonly address: string; readonly port: number };
  /** An `http://` URL on an origin that answers 200. */
  readonly url: string;
  /** The credential the password file holds. */
  readonly right: Credential;
  /** A source address inside the proxy's allowed sources. */
  readonly inside: string;
  /** A source address outside them. */
  readonly outside: string;
}

/**
 * The answers of every case a proxy with Basic authentication must tell
 * apart, as `case → "status"` (a CONNECT's refusal is its own status; a
 * 407 adds the challenge): none, wrong and right credentials, both ways
 * of giving them, from an allowed source and from another one, plain and
 * through CONNECT.
 */
export async function authMatrix(s: AuthMatrixSetup): Promise<Record<string, string>> {
  const wrong: Credential = { user: s.right.user, password: `${s.right.password}-wrong` };
  const stranger: Credential = { user: `${s.right.user}-unknown`, password: s.right.password };
  const cases: Record<string, Omit<CurlRequest, 'proxy' | 'url'>> = {
    'no credentials': { localAddress: s.inside },
    'a wrong password': { credential: wrong, localAddress: s.inside },
    'an unknown user': { credential: stranger, localAddress: s.inside },
    'the right credential, --proxy-user': { credential: s.right, localAddress: s.inside },
    'the right credential, in the proxy URL': {
      credential: s.right,
      form: 'url',
      localAddress: s.inside,
    },
    'the right credential, from outside the sources': {
      credential: s.right,
      localAddress: s.outside,
    },
    'no credentials, from outside the sources': { localAddress: s.outside },
  };
  const out: Record<string, string> = {};
  for (const [name, c] of Object.entries(cases)) {
    for (const tunnel of [false, true]) {
      const a = await curlThroughProxy({ proxy: s.proxy, url: s.url, tunnel, ...c });
      const status = tunnel && a.connect !== 200 ? a.connect : a.status;
      out[`${tunnel ? 'CONNECT' : 'GET'}, ${name}`] =
        status === 407 ? `407 ${a.challenge ?? '(no challenge)'}` : String(status);
    }
  }
  return out;
}

/**
 * What every proxy with Basic authentication and allowed sources answers to
 * {@link authMatrix}. `outside` is what a source outside the allowed ones
 * gets: `'403'` (Squid), or `'0'` from a proxy that closes such a
 * connection unanswered, as `@proxy-op/forward-proxy` does.
 */
export function expectedAuthMatrix(realm: string, outside = '403'): Record<string, string> {
  const challenge = `407 Basic realm="${realm}"`;
  return {
    'GET, no credentials': challenge,
    'CONNECT, no credentials': challenge,
    'GET, a wrong password': challenge,
    'CONNECT, a wrong password': challenge,
    'GET, an unknown user': challenge,
    'CONNECT, an unknown user': challenge,
    'GET, the right credential, --proxy-user': '200',
    'CONNECT, the right credential, --proxy-user': '200',
    'GET, the right credential, in the proxy URL': '200',
    'CONNECT, the right credential, in the proxy URL': '200',
    'GET, the right credential, from outside the sources': outside,
    'CONNECT, the right credential, from outside the sources': outside,
    'GET, no credentials, from outside the sources': outside,
    'CONNECT, no credentials, from outside the sources': outside,
  };
}

/** The `Proxy-Authorization` value of a credential. */
export function basicAuthorization(c: Credential): string {
  return `Basic ${Buffer.from(`${c.user}:${c.password}`, 'utf8').toString('base64')}`;
}

/** What a {@link CredentialLoop} saw, by the user whose credential each request carried. */
export interface LoopCounts {
  readonly ok: Readonly<Record<string, number>>;
  /** Requests that got anything but 200, or failed: `user status` (or `user error`) each. */
  readonly failures: readonly string[];
}

/** Keep-alive clients sending requests through a proxy until stopped. */
export interface CredentialLoop {
  /** What was seen so far. */
  counts(): LoopCounts;
  /**
   * Resolves once every request in flight at the call has finished: after
   * a change of what `credential()` returns, no request still carries the
   * credential it returned before.
   */
  drain(): Promise<void>;
  /** Stops sending, waits for the requests in flight, and says what was seen. */
  stop(): Promise<LoopCounts>;
}

/** Where a proxy listens. */
export interface ProxyAddress {
  readonly address: string;
  readonly port: number;
}

/**
 * Starts `concurrency` clients, each sending `GET url` through the proxy
 * on kept-open connections one request after another, with the
 * credential `credential()` returns when each request is sent. A `proxy`
 * function is asked at each request too (a client that follows a URL
 * whose address changes, as a make-before-break rotation changes it).
 */
export function startCredentialLoop(opts: {
  readonly proxy: ProxyAddress | (() => ProxyAddress);
  readonly url: string;
  readonly concurrency: number;
  readonly credential: () => Credential;
}): CredentialLoop {
  const agent = new Agent({ keepAlive: true, maxSockets: opts.concurrency });
  const ok: Record<string, number> = {};
  const failures: string[] = [];
  let running = true;
  const proxy = typeof opts.proxy === 'function' ? opts.proxy : () => opts.proxy as ProxyAddress;
  const once = (c: Credential, at: ProxyAddress) =>
    new Promise<void>((resolve) => {
      const req = request(
        {
          host: at.address,
          port: at.port,
          path: opts.url,
          agent,
          headers: { 'proxy-authorization': basicAuthorization(c) },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 200) ok[c.user] = (ok[c.user] ?? 0) + 1;
            else failures.push(`${c.user} ${res.statusCode}`);
            resolve();
          });
        },
      );
      req.on('error', (err) => {
        failures.push(`${c.user} ${(err as NodeJS.ErrnoException).code ?? err.message}`);
        resolve();
      });
      req.end();
    });
  const current: Array<Promise<void>> = [];
  const client = async (_: unknown, i: number) => {
    while (running) {
      const sent = once(opts.credential(), proxy());
      current[i] = sent;
      await sent;
    }
  };
  const clients = Array.from({ length: opts.concurrency }, client);
  const counts = () => ({ ok: { ...ok }, failures: [...failures] });
  return {
    counts,
    async drain() {
      await Promise.all([...current]);
    },
    async stop() {
      running = false;
      await Promise.all(clients);
      agent.destroy();
      return counts();
    },
  };
}

/** Replaces `path` with `text` by writing a file beside it and renaming it over `path`. */
export async function replaceFile(path: string, text: string, mode = 0o644): Promise<void> {
  const next = join(dirname(path), `.${basename(path)}.${process.pid}.next`);
  await writeFile(next, text, { mode });
  await rename(next, path);
}

/** The status of one `GET url` through the proxy with `credential`, on a connection of its own. */
export function statusWith(
  proxy: { readonly address: string; readonly port: number },
  url: string,
  credential: Credential,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: proxy.address,
        port: proxy.port,
        path: url,
        agent: false,
        headers: { 'proxy-authorization': basicAuthorization(credential), connection: 'close' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** What a rotation under load saw. */
export interface RotationReport extends LoopCounts {
  /** From the rewrite with both users to the first 200 for the new one, in ms. */
  readonly newUserSeenMs: number;
  /** From the rewrite without the old user to its first 407, in ms. */
  readonly oldUserRefusedMs: number;
}

/**
 * A credential rotation while `concurrency` keep-alive clients send
 * requests through the proxy, as an operator does it: the password file
 * (holding `old` when this starts) is replaced by one with both users;
 * once the new user gets through, the clients switch to it; then the file
 * is replaced by one with the new user alone (the old one used a last
 * time just before), and the old one is tried until it is refused. `beforeWrite` runs before each rewrite (a Squid
 * helper that only sees a change of the modification time's second needs
 * to wait for the next one). Polls every 25 ms; `deadlineMs` is a safety
 * net for each wait, never a measure.
 */
export async function rotateUnderLoad(o: {
  readonly proxy: { readonly address: string; readonly port: number };
  readonly url: string;
  readonly passwordFile: string;
  readonly hash: (password: string) => string;
  readonly old: Credential;
  readonly next: Credential;
  readonly concurrency: number;
  readonly loadMs: number;
  readonly beforeWrite?: (() => Promise<void>) | undefined;
  readonly deadlineMs?: number | undefined;
}): Promise<RotationReport> {
  const line = (c: Credential) => `${c.user}:${o.hash(c.password)}\n`;
  const deadline = o.deadlineMs ?? 30_000;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** Polls until `credential` gets `status`; how long that took, from `since`. */
  const until = async (credential: Credential, status: number, since: number) => {
    while ((await statusWith(o.proxy, o.url, credential)) !== status) {
      if (performance.now() - since > deadline) {
        throw new Error(`${credential.user} never got ${status} within ${deadline} ms`);
      }
      await sleep(25);
    }
    return Math.round(performance.now() - since);
  };
  let current = o.old;
  const loop = startCredentialLoop({ ...o, credential: () => current });
  try {
    await sleep(o.loadMs);
    await o.beforeWrite?.();
    const both = `${line(o.old)}${line(o.next)}`;
    await replaceFile(o.passwordFile, both);
    const newUserSeenMs = await until(o.next, 200, performance.now());
    current = o.next;
    await sleep(o.loadMs);
    await o.beforeWrite?.();
    // The old user is used once more just before it is removed, as a client that has not
    // switched yet would: what the proxy keeps of it is as fresh as it can be.
    const last = await statusWith(o.proxy, o.url, o.old);
    if (last !== 200) throw new Error(`the old user got ${last} before it was removed`);
    await replaceFile(o.passwordFile, line(o.next));
    const oldUserRefusedMs = await until(o.old, 407, performance.now());
    await sleep(o.loadMs);
    return { ...(await loop.stop()), newUserSeenMs, oldUserRefusedMs };
  } finally {
    await loop.stop();
  }
}

/** Waits until the wall clock's second changes, and 50 ms more. */
export async function nextSecond(): Promise<void> {
  await new Promise((r) => setTimeout(r, 1_050 - (Date.now() % 1_000)));
}
