/**
 * The probe: through a forward proxy, an absolute-form `GET` to the target
 * and a `CONNECT` tunnel to it (TLS inside when the target is `https:`),
 * each carrying a fresh nonce the target must echo; with a credential, also
 * a request without it, which must be refused with 407. One socket per
 * check, opened in turn and always closed; one deadline for the whole
 * probe; the caller's signal cancels it.
 *
 * @module
 */
import { type Socket, connect as tcpConnect } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { nonce, readAnswer, refusal, statusText, withNonce } from './answer.js';
import { ProbeAbortedError } from './errors.js';
import { type AnswerHead, AnswerReader, requestHead, StepFailure } from './http.js';
import { socks5Connect } from './socks5.js';
import { tlsInTunnel } from './tls.js';
import {
  bare,
  PROBE_DEFAULTS,
  type ProbeCheck,
  type ProbeCheckName,
  type ProbeOptions,
  type ProbeProxy,
  type ProbeResult,
  type ProbeStep,
  type ProbeStepName,
  type ProbeTarget,
  type ProbeTls,
  proxyAddress,
  targetUrls,
} from './types.js';

/** Thrown inside a run when its deadline or its caller stopped it. */
class Stopped extends Error {}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/** One probe's state: its steps, its sockets and its deadline. */
class ProbeRun {
  readonly #proxy: { host: string; port: number };
  readonly #opts: ProbeOptions;
  readonly #timeoutMs: number;
  readonly #maxBytes: number;
  readonly #abort = new AbortController();
  readonly #sockets = new Set<Socket | TLSSocket>();
  readonly #steps: ProbeStep[] = [];
  #timedOut = false;

  constructor(proxy: { host: string; port: number }, opts: ProbeOptions) {
    this.#proxy = proxy;
    this.#opts = opts;
    this.#timeoutMs = opts.timeoutMs ?? PROBE_DEFAULTS.timeoutMs;
    this.#maxBytes = opts.maxAnswerBytes ?? PROBE_DEFAULTS.maxAnswerBytes;
    this.#abort.signal.addEventListener('abort', () => {
      for (const s of this.#sockets) s.destroy();
    });
  }

  /** Runs the checks in turn; rejects only when the caller's signal aborted. */
  async run(target: ReturnType<typeof targetUrls>): Promise<ProbeResult> {
    const startedAt = new Date();
    const t0 = performance.now();
    const caller = this.#opts.signal;
    const onAbort = () => this.#abort.abort(caller?.reason);
    caller?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => {
      this.#timedOut = true;
      this.#abort.abort(new Error('timeout'));
    }, this.#timeoutMs);
    const checks: ProbeCheck[] = [];
    try {
      const more = () =>
        !this.#abort.signal.aborted && !this.#steps.some((s) => s.step === 'connect' && !s.ok);
      if (target.get !== undefined) checks.push(await this.#get(target.get));
      if (target.connect !== undefined && more()) {
        checks.push(await this.#tunnel(target.connect, target.tls));
      }
      const tunnelTo = target.connect ?? target.get;
      if (this.#opts.socks5 === true && tunnelTo !== undefined && more()) {
        checks.push(await this.#socks5(tunnelTo, target.tls));
      }
      const plain = target.get ?? target.connect;
      if (this.#opts.credentials !== undefined && plain !== undefined && more()) {
        checks.push(await this.#auth(plain));
      }
    } finally {
      clearTimeout(timer);
      caller?.removeEventListener('abort', onAbort);
      for (const s of this.#sockets) s.destroy();
    }
    if (caller?.aborted === true && !this.#timedOut) throw new ProbeAbortedError(caller.reason);
    const steps = this.#steps;
    const failed = steps.find((s) => !s.ok);
    const first = checks[0];
    return {
      ok: failed === undefined && checks.length > 0 && checks.every((c) => c.ok),
      startedAt,
      steps,
      checks,
      ...(failed === undefined
        ? {}
        : { failure: { check: failed.check, step: failed.step, message: failed.message } }),
      latency: {
        ...(first?.latency.connectMs === undefined ? {} : { connectMs: first.latency.connectMs }),
        ...(first?.latency.firstByteMs === undefined
          ? {}
          : { firstByteMs: first.latency.firstByteMs }),
        totalMs: round(performance.now() - t0),
      },
      ...(() => {
        const egress = checks.find((c) => c.egressIP !== undefined)?.egressIP;
        return egress === undefined ? {} : { egressIP: egress };
      })(),
    };
  }

  /** Resolves or rejects with `p`, or rejects with {@link Stopped} once the run is stopped. */
  #until<T>(p: Promise<T>): Promise<T> {
    const signal = this.#abort.signal;
    return new Promise<T>((resolve, reject) => {
      if (signal.aborted) {
        p.catch(() => {});
        reject(new Stopped());
        return;
      }
      const onAbort = () => reject(new Stopped());
      signal.addEventListener('abort', onAbort, { once: true });
      p.then(
        (v) => {
          signal.removeEventListener('abort', onAbort);
          resolve(v);
        },
        (e: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });
  }

  /**
   * Runs one step: `fn` resolves with its message (and status) or throws
   * with what went wrong. Resolves true when the step passed.
   */
  async #step(
    check: ProbeCheckName,
    step: ProbeStepName,
    doing: string,
    fn: () => Promise<{ message: string; status?: number; ok?: boolean }>,
  ): Promise<boolean> {
    const t = performance.now();
    let out: { message: string; status?: number | undefined; ok: boolean };
    try {
      const r = await fn();
      out = { message: r.message, status: r.status, ok: r.ok ?? true };
    } catch (err) {
      const message =
        err instanceof Stopped
          ? `timed out after ${this.#timeoutMs} ms ${doing}`
          : err instanceof StepFailure
            ? err.message
            : `${doing}: ${(err as Error).message}`;
      out = { message, ok: false };
    }
    this.#steps.push({
      check,
      step,
      ok: out.ok,
      ms: round(performance.now() - t),
      message: out.message,
      ...(out.status === undefined ? {} : { status: out.status }),
    });
    return out.ok;
  }

  /** Opens the check's connection to the proxy (the `connect` step). */
  async #open(check: ProbeCheckName): Promise<Socket | undefined> {
    const { host, port } = this.#proxy;
    const where = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    let socket: Socket | undefined;
    const ok = await this.#step(
      check,
      'connect',
      `connecting to the proxy at ${where}`,
      async () => {
        const s = tcpConnect({
          host,
          port,
          noDelay: true,
          ...(this.#opts.localAddress === undefined
            ? {}
            : { localAddress: this.#opts.localAddress }),
        });
        s.on('error', () => {});
        this.#sockets.add(s);
        socket = s;
        await this.#until(
          new Promise<void>((resolve, reject) => {
            s.once('connect', resolve);
            s.once('error', reject);
          }),
        );
        return { message: `connected to the proxy at ${where}` };
      },
    );
    return ok ? socket : undefined;
  }

  /** Closes a check's sockets and waits until they are closed, before the next check opens one. */
  async #close(...sockets: Array<Socket | TLSSocket>): Promise<void> {
    await Promise.all(
      sockets.map(async (s) => {
        this.#sockets.delete(s);
        if (s.closed) return;
        const closed = new Promise<void>((r) => s.once('close', () => r()));
        s.destroy();
        await closed;
      }),
    );
  }

  #authHeader(): Array<[string, string]> {
    const c = this.#opts.credentials;
    if (c === undefined) return [];
    const token = Buffer.from(`${c.username}:${c.password}`, 'utf8').toString('base64');
    return [['Proxy-Authorization', `Basic ${token}`]];
  }

  /** The `nonce` step: the body must be the target's JSON with the nonce sent. */
  #nonceStep(check: ProbeCheckName, reader: AnswerReader, head: AnswerHead, sent: string) {
    let egress: string | undefined;
    const step = this.#step(check, 'nonce', 'reading the answer', async () => {
      const body = await this.#until(reader.body(head, 'GET'));
      const read = readAnswer(body, sent);
      egress = read.egress;
      return read;
    });
    return step.then((ok) => ({ ok, egress }));
  }

  /**
   * The `status` step (a 200 from `who`) and the `nonce` step of one
   * answer; resolves with the address the target saw.
   */
  async #answer(
    check: ProbeCheckName,
    reader: AnswerReader,
    who: 'the proxy' | 'the target',
    sent: string,
  ): Promise<string | undefined> {
    let head: AnswerHead | undefined;
    const doing =
      who === 'the proxy'
        ? 'waiting for the proxy’s answer'
        : 'waiting for the target’s answer in the tunnel';
    const passed = await this.#step(check, 'status', doing, async () => {
      head = await this.#until(reader.head());
      if (head.status !== 200)
        return { ok: false, status: head.status, message: refusal(head, who) };
      return { status: 200, message: `${who} answered ${statusText(head)}` };
    });
    if (!passed || head === undefined) return undefined;
    return (await this.#nonceStep(check, reader, head, sent)).egress;
  }

  async #get(url: URL): Promise<ProbeCheck> {
    const t0 = performance.now();
    const check = 'get';
    const steps0 = this.#steps.length;
    const latency: { connectMs?: number; firstByteMs?: number } = {};
    let egressIP: string | undefined;
    const socket = await this.#open(check);
    if (socket !== undefined) {
      latency.connectMs = round(performance.now() - t0);
      const sent = nonce();
      const u = withNonce(url, sent);
      const reader = new AnswerReader(socket, this.#maxBytes, 'the proxy');
      socket.write(
        requestHead('GET', u.href, [
          ['Host', u.host],
          ['User-Agent', 'proxy-op-probe'],
          ['Accept', 'application/json'],
          ['Cache-Control', 'no-cache'],
          ['Connection', 'close'],
          ...this.#authHeader(),
        ]),
      );
      egressIP = await this.#answer(check, reader, 'the proxy', sent);
      if (reader.firstByteAt !== undefined) latency.firstByteMs = round(reader.firstByteAt - t0);
      await this.#close(socket);
    }
    return this.#checkResult(check, steps0, t0, latency, egressIP);
  }

  /** A `CONNECT` tunnel to the target: the proxy's `200`, then TLS inside for `https:`. */
  #tunnel(url: URL, tls: ProbeTls): Promise<ProbeCheck> {
    const https = url.protocol === 'https:';
    const authority = `${url.hostname}:${url.port || (https ? 443 : 80)}`;
    return this.#tunnelCheck(
      'connect',
      url,
      tls,
      `opening a tunnel to ${authority}`,
      async (raw, latency, t0) => {
        const reader = new AnswerReader(raw, this.#maxBytes, 'the proxy');
        raw.write(requestHead('CONNECT', authority, [['Host', authority], ...this.#authHeader()]));
        try {
          const head = await this.#until(reader.head());
          if (head.status !== 200) {
            const message = `CONNECT ${authority}: ${refusal(head, 'the proxy')}`;
            return { ok: false, status: head.status, message };
          }
          const rest = reader.release();
          if (rest.length > 0) raw.unshift(rest);
          return {
            ok: true,
            status: 200,
            message: `CONNECT ${authority} answered ${statusText(head)}`,
          };
        } finally {
          if (reader.firstByteAt !== undefined)
            latency.firstByteMs = round(reader.firstByteAt - t0);
        }
      },
    );
  }

  /**
   * A check through a tunnel to `url`: the connection to the proxy, the
   * `tunnel` step (what `open` does, then TLS inside for `https:`), and the
   * GET with a nonce inside.
   */
  async #tunnelCheck(
    check: 'connect' | 'socks5',
    url: URL,
    tls: ProbeTls,
    doing: string,
    open: (
      raw: Socket,
      latency: { firstByteMs?: number },
      t0: number,
    ) => Promise<{ ok: boolean; status?: number; message: string }>,
  ): Promise<ProbeCheck> {
    const t0 = performance.now();
    const steps0 = this.#steps.length;
    const latency: { connectMs?: number; firstByteMs?: number } = {};
    let egressIP: string | undefined;
    const raw = await this.#open(check);
    if (raw !== undefined) {
      latency.connectMs = round(performance.now() - t0);
      let inner: Socket | TLSSocket = raw;
      const tunnelled = await this.#step(check, 'tunnel', doing, async () => {
        const opened = await open(raw, latency, t0);
        if (!opened.ok) return opened;
        if (url.protocol !== 'https:') {
          raw.resume();
          return opened;
        }
        const secured = tlsInTunnel(raw, url, tls);
        this.#sockets.add(secured.socket);
        inner = await this.#until(secured.ready);
        const protocol = (inner as TLSSocket).getProtocol() ?? 'TLS';
        return { ...opened, message: `${opened.message}; TLS inside the tunnel (${protocol})` };
      });
      if (tunnelled) egressIP = await this.#inTunnel(check, url, inner);
      await this.#close(inner, raw);
    }
    return this.#checkResult(check, steps0, t0, latency, egressIP);
  }

  /** The GET with a nonce inside an open tunnel, and its `status` and `nonce` steps. */
  #inTunnel(check: ProbeCheckName, url: URL, inner: Socket | TLSSocket) {
    const sent = nonce();
    const u = withNonce(url, sent);
    const answers = new AnswerReader(inner, this.#maxBytes, 'the target');
    inner.write(
      requestHead('GET', `${u.pathname}${u.search}`, [
        ['Host', u.host],
        ['User-Agent', 'proxy-op-probe'],
        ['Accept', 'application/json'],
        ['Connection', 'close'],
      ]),
    );
    return this.#answer(check, answers, 'the target', sent);
  }

  /** A SOCKS5 `CONNECT` to the target, the credential as its user name and password (RFC 1929). */
  #socks5(url: URL, tls: ProbeTls): Promise<ProbeCheck> {
    const https = url.protocol === 'https:';
    const host = bare(url.hostname);
    const port = Number(url.port || (https ? 443 : 80));
    const doing = `opening a SOCKS5 tunnel to ${url.host}`;
    return this.#tunnelCheck('socks5', url, tls, doing, async (raw, latency, t0) => {
      const creds = this.#opts.credentials;
      const message = await socks5Connect(raw, host, port, creds, (p) => this.#until(p));
      latency.firstByteMs = round(performance.now() - t0);
      return { ok: true, message };
    });
  }

  async #auth(url: URL): Promise<ProbeCheck> {
    const t0 = performance.now();
    const check = 'auth';
    const steps0 = this.#steps.length;
    const latency: { connectMs?: number; firstByteMs?: number } = {};
    const socket = await this.#open(check);
    if (socket !== undefined) {
      latency.connectMs = round(performance.now() - t0);
      const u = withNonce(url, nonce());
      const reader = new AnswerReader(socket, this.#maxBytes, 'the proxy');
      socket.write(
        requestHead('GET', u.href, [
          ['Host', u.host],
          ['User-Agent', 'proxy-op-probe'],
          ['Connection', 'close'],
        ]),
      );
      await this.#step(
        check,
        'auth',
        'waiting for the proxy’s answer without credentials',
        async () => {
          const head = await this.#until(reader.head());
          if (head.status === 407) {
            return { status: 407, message: 'a request without credentials was refused with 407' };
          }
          return {
            ok: false,
            status: head.status,
            message: `a request without credentials was answered ${statusText(head)}, not 407: the proxy does not ask for them`,
          };
        },
      );
      if (reader.firstByteAt !== undefined) latency.firstByteMs = round(reader.firstByteAt - t0);
      await this.#close(socket);
    }
    return this.#checkResult(check, steps0, t0, latency, undefined);
  }

  #checkResult(
    check: ProbeCheckName,
    from: number,
    t0: number,
    latency: { connectMs?: number; firstByteMs?: number },
    egressIP: string | undefined,
  ): ProbeCheck {
    const steps = this.#steps.slice(from);
    // auth: connect, auth; get: connect, status, nonce; connect and socks5 add their tunnel step.
    const complete = check === 'auth' ? 2 : check === 'get' ? 3 : 4;
    return {
      check,
      ok: steps.length === complete && steps.every((s) => s.ok),
      steps,
      latency: { ...latency, totalMs: round(performance.now() - t0) },
      ...(egressIP === undefined ? {} : { egressIP }),
    };
  }
}

/**
 * Probes `proxy` through its data plane: an absolute-form `GET` of the
 * target's `get` URL and a `CONNECT` tunnel to its `connect` URL (TLS
 * inside for `https:`), each with a fresh nonce the target must echo; with
 * `credentials`, also a request without them, which must get 407. Resolves
 * with every step's outcome, the latencies and the egress IP the target
 * saw, whatever failed (a refused connection, a 403, a wrong nonce, the
 * deadline); rejects with a `ProbeAbortedError` when `signal` aborts, and
 * with a `TypeError` when `proxy` or `target` is no URL.
 */
export async function probe(
  proxy: ProbeProxy,
  target: ProbeTarget,
  options: ProbeOptions = {},
): Promise<ProbeResult> {
  const address = proxyAddress(proxy);
  const urls = targetUrls(target);
  const t = options.timeoutMs;
  if (t !== undefined && !(Number.isFinite(t) && t > 0)) {
    throw new TypeError('probe: timeoutMs must be a positive number');
  }
  if (options.signal?.aborted === true) throw new ProbeAbortedError(options.signal.reason);
  return new ProbeRun(address, options).run(urls);
}
