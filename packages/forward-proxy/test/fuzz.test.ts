// Peer: llhttp (undici's WebAssembly build) as the oracle; the proxy program (bin/proxy-server.js)
// spawned as a child process; a raw TCP origin that reads with llhttp. The differential fuzzer:
// seeded, deterministic inputs (valid request streams and origin answers, mutated), each read
// by the proxy's reader and by llhttp (no disagreement; refusals beyond llhttp only those the
// README lists), and a share of them sent through the running proxy: the origin reads exactly
// the messages the proxy's reader predicts, llhttp refuses nothing that reaches the origin or
// the client, the proxy process survives and every descriptor it opened is released.
//
// `npm test` runs a short fixed-seed run. `npm run fuzz` runs for FUZZ_SECONDS (default 600)
// with FUZZ_SEED (default random); both print the seed and the counts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeHealth } from '../src/health.js';
import { parseHttpTarget } from '../src/target.js';
import {
  compareRequests,
  compareResponse,
  documentedRefusals,
  type OurResult,
  ourRequests,
  ourResponses,
} from './differential.js';
import { fuzzRequest, fuzzResponse, Random } from './fuzz.js';
import { llhttpParse } from './llhttp.js';
import {
  exchange,
  type RecordingOrigin,
  startProxyAndOrigin,
  stopProxyAndOrigin,
} from './origins.js';
import { eventually, fdCount, type RunningProxy } from './support.js';

const LONG = process.env.FUZZ === 'long';
const SECONDS = Number(process.env.FUZZ_SECONDS ?? 600);
const SEED = Number(
  process.env.FUZZ_SEED ?? (LONG ? Math.floor(Math.random() * 2 ** 31) : 20_251_201),
);
/** The short run: inputs read by both readers, and inputs sent through the proxy. */
const SHORT_INPUTS = 20_000;
const SHORT_PROXIED = 300;
const ADDRESS = '127.0.4.60';

const documented = documentedRefusals();

interface Tally {
  inputs: number;
  requests: number;
  responses: number;
  proxied: number;
  extra: Map<string, number>;
  problems: string[];
}

const tally: Tally = {
  inputs: 0,
  requests: 0,
  responses: 0,
  proxied: 0,
  extra: new Map(),
  problems: [],
};

function note(problem: string): void {
  if (tally.problems.length < 10) tally.problems.push(problem);
}

/** One input read by both readers. */
function differential(r: Random): void {
  tally.inputs++;
  if (r.int(2) === 0) {
    tally.requests++;
    const input = fuzzRequest(r, { authority: '127.0.0.1:8080' });
    check(compareRequests(input), input);
  } else {
    tally.responses++;
    const { method, input } = fuzzResponse(r);
    const eof = r.int(2) === 0;
    check(compareResponse(input, method, eof), input);
  }
}

function check(c: { problems: string[]; extraRefusal: string | undefined }, input: Buffer): void {
  const shown = JSON.stringify(input.toString('latin1'));
  for (const p of c.problems) note(`${p} in ${shown}`);
  if (c.extraRefusal !== undefined) {
    tally.extra.set(c.extraRefusal, (tally.extra.get(c.extraRefusal) ?? 0) + 1);
    if (!documented.has(c.extraRefusal))
      note(`an undocumented refusal ${c.extraRefusal} of ${shown}`);
  }
}

let origin: RecordingOrigin;
let proxy: RunningProxy;
let baselineFds = 0;

beforeAll(async () => {
  ({ origin, proxy } = await startProxyAndOrigin(ADDRESS, {
    headersTimeoutMs: 500,
    bodyIdleTimeoutMs: 500,
    connectTimeoutMs: 500,
    idleTimeoutMs: 2_000,
    originIdleMs: 100,
    maxHeaderFields: 100,
  }));
  baselineFds = fdCount(proxy.pid);
}, 30_000);

afterAll(() => stopProxyAndOrigin({ origin, proxy }));

/** The requests the origin should read for `ours`: in order, until one the proxy answers itself. */
function expectedAtOrigin(ours: OurResult): string[] | undefined {
  const out: string[] = [];
  for (const m of ours.messages) {
    if (m.method === 'CONNECT') return undefined; // a tunnel: not sent (bytes go raw)
    if (m.target === '/healthz') continue;
    const t = parseHttpTarget(m.target);
    if (typeof t === 'string') return out;
    // Any other host or port is not sent: a mutated address must never reach out to another
    // machine or to some other program's port on this one (which could answer anything).
    if (t.host !== '127.0.0.1' || t.port !== origin.port) return undefined;
    out.push(`${m.method} ${t.path} ${m.body.length}`);
  }
  return out;
}

/** One request input sent through the proxy; the origin must read what the reader predicts. */
async function proxiedRequest(r: Random): Promise<void> {
  const input = fuzzRequest(r, { authority: `127.0.0.1:${origin.port}` });
  const ours = ourRequests(input);
  const expected = expectedAtOrigin(ours);
  if (expected === undefined) return;
  tally.proxied++;
  origin.reset();
  const got = await exchange(proxy, input, { timeoutMs: 5_000 });
  const shown = JSON.stringify(input.toString('latin1'));
  if (got.timedOut) note(`the proxy did not close the connection for ${shown}`);
  const seen = origin.requests.map((q) => `${q.method} ${q.target} ${q.body.length}`);
  if (JSON.stringify(seen) !== JSON.stringify(expected)) {
    note(
      `the origin read ${JSON.stringify(seen)}, expected ${JSON.stringify(expected)}, for ${shown}`,
    );
  }
  for (const x of origin.refusals) note(`${x} (sent for ${shown})`);
  // The answers: one per request read, then maybe one of the proxy's own to the request it
  // stopped at (to HEAD, that one is bodiless too).
  const stoppedAt = 'start' in ours.outcome ? ours.outcome.start : input.length;
  const next = /^(?:\r\n)*HEAD /.test(input.toString('latin1', stoppedAt, stoppedAt + 16));
  const methods = [...ours.messages.map((m) => m.method), next ? 'HEAD' : 'GET'];
  const answers = llhttpParse('response', Buffer.from(got.text, 'latin1'), { methods, eof: true });
  if (answers.error !== undefined && !got.reset) {
    note(`the client could not read the answers (${answers.error.reason}) for ${shown}`);
  }
}

/** One origin answer sent through the proxy: passed on as the reader read it, or not at all. */
async function proxiedResponse(r: Random): Promise<void> {
  const { method, input } = fuzzResponse(r);
  const ours = ourResponses(input, method, true);
  tally.proxied++;
  origin.reset();
  origin.answer = () => ({ bytes: input, close: true });
  const target = `http://127.0.0.1:${origin.port}/r`;
  const got = await exchange(proxy, `${method} ${target} HTTP/1.1\r\nConnection: close\r\n\r\n`, {
    timeoutMs: 5_000,
  });
  const shown = JSON.stringify(input.toString('latin1'));
  if (got.timedOut) note(`the proxy did not close the connection for the answer ${shown}`);
  const seen = llhttpParse('response', Buffer.from(got.text, 'latin1'), {
    methods: [method],
    eof: true,
  });
  const final = seen.messages.find((m) => m.status >= 200);
  const meant = ours.outcome.kind === 'answered' ? ours.messages.at(-1) : undefined;
  if (meant !== undefined) {
    if (final === undefined || final.status !== meant.status || !final.body.equals(meant.body)) {
      note(`the client got ${JSON.stringify(got.text.slice(0, 200))} for the answer ${shown}`);
    }
  } else if (final !== undefined && final.status !== 502) {
    note(`an answer the reader refused reached the client: ${shown}`);
  }
}

describe(`the differential fuzzer (seed ${SEED})`, () => {
  it(
    LONG
      ? `${SECONDS} s of inputs, read by both, a share sent through the proxy`
      : `${SHORT_INPUTS} inputs read by both, ${SHORT_PROXIED} sent through the proxy`,
    async () => {
      const local = new Random(SEED);
      const remote = new Random(SEED ^ 0x5eed);
      const deadline = performance.now() + SECONDS * 1000;
      let sent = 0;
      for (;;) {
        const more = LONG
          ? performance.now() < deadline
          : tally.inputs < SHORT_INPUTS || sent < SHORT_PROXIED;
        if (!more || tally.problems.length >= 10) break;
        // A batch read by both, then one through the proxy.
        const batch = LONG ? 200 : Math.ceil(SHORT_INPUTS / SHORT_PROXIED);
        for (let i = 0; i < batch && (LONG || tally.inputs < SHORT_INPUTS); i++)
          differential(local);
        if (LONG || sent < SHORT_PROXIED) {
          sent++;
          if (remote.int(3) === 0) await proxiedResponse(remote);
          else await proxiedRequest(remote);
          if (
            sent % 200 === 0 &&
            !(await probeHealth('under-test', proxy.address, proxy.port, 2_000))
          ) {
            note(`the proxy stopped answering after ${sent} inputs`);
          }
        }
      }
      expect(proxy.child.exitCode, 'the proxy process is still running').toBeNull();
      expect(await probeHealth('under-test', proxy.address, proxy.port, 2_000)).toBe(true);
      // Every connection it opened, to clients and origins, is closed again.
      origin.reset();
      await eventually(() => origin.open === 0 && fdCount(proxy.pid) <= baselineFds, 10_000);
      const fds = fdCount(proxy.pid);
      const extra = [...tally.extra].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`);
      console.log(
        `fuzz: seed ${SEED}; ${tally.inputs} inputs read by both (${tally.requests} request streams, ` +
          `${tally.responses} origin answers), ${tally.proxied} sent through the proxy; ` +
          `proxy descriptors ${baselineFds} before, ${fds} after; ` +
          `refusals beyond llhttp: ${extra.join(', ') || 'none'}; problems: ${tally.problems.length}`,
      );
      expect(tally.problems).toEqual([]);
      expect(fds).toBeLessThanOrEqual(baselineFds);
    },
    LONG ? (SECONDS + 120) * 1000 : 120_000,
  );
});
