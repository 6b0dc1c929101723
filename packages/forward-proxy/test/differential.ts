// Test support (not a test file): the proxy's reader and llhttp side by side on the same bytes.
// `ourRequests` and `ourResponses` drive the proxy's own pieces (HeadReader, the head parsers,
// routeRequest, BodyReader) the way a client connection and an exchange do; `differences`
// holds them to llhttp: what the proxy accepts, llhttp reads the same way (method, target,
// version, fields, body bytes, where the message ends, whether the connection goes on), and
// what llhttp refuses, the proxy refuses too. What the proxy refuses beyond that is returned
// as its reasons, for the caller to hold to the README's list.
import { readFileSync } from 'node:fs';
import {
  type Framing,
  HeadError,
  parseRequestHead,
  parseResponseHead,
  type Refusal,
} from '../src/http1.js';
import { DEFAULT_LIMITS, type ProxyLimits } from '../src/limits.js';
import { BodyReader, HeadReader } from '../src/reader.js';
import { type RouteRefusal, routeRequest } from '../src/route.js';
import { parseAuthority } from '../src/target.js';
import { type LlResult, llhttpParse } from './llhttp.js';

/** One message as the proxy read it. */
export interface OurMessage {
  readonly method: string;
  readonly target: string;
  readonly status: number;
  readonly minor: number;
  readonly headers: [string, string][];
  readonly body: Buffer;
  readonly keepAlive: boolean;
  readonly end: number;
}

/** How the proxy's reading of an input ended. */
export type OurOutcome =
  /** A refusal: the rule, and where the refused message began. */
  | {
      readonly kind: 'refused';
      readonly reason: Refusal | RouteRefusal | 'switching-protocols' | 'connect-target';
      readonly start: number;
    }
  /** The input ended inside a message; `consumed` is how far its bytes were taken. */
  | { readonly kind: 'pending'; readonly start: number; readonly consumed: number }
  /** Every byte was read as whole messages. */
  | { readonly kind: 'done' }
  /** The connection ends after the last message (it did not keep alive). */
  | { readonly kind: 'closed' }
  /** A CONNECT was read: what follows is tunnel bytes. */
  | { readonly kind: 'tunnel'; readonly at: number }
  /** A final answer was read; what followed it is not read (the connection is dropped). */
  | { readonly kind: 'answered' };

/** What the proxy made of an input. */
export interface OurResult {
  readonly messages: OurMessage[];
  readonly outcome: OurOutcome;
}

function fieldPairs(f: { names: string[]; values: string[] }): [string, string][] {
  return f.names.map((n, i) => [n, f.values[i] as string]);
}

/** A head read at `at`, with the offset just past it. */
interface Found<H> {
  readonly head: H;
  readonly end: number;
}

/** Reads the head at `at` with `parse`; or says how the reading stopped there. */
function nextHead<H>(
  heads: HeadReader,
  input: Buffer,
  at: number,
  parse: (text: string) => H,
): Found<H> | OurOutcome {
  try {
    const span = heads.find(input.subarray(at));
    if (span === undefined) return { kind: 'pending', start: at, consumed: at };
    const text = input.toString('latin1', at + span.start, at + span.end - 4);
    return { head: parse(text), end: at + span.end };
  } catch (err) {
    if (!(err instanceof HeadError)) throw err;
    return { kind: 'refused', reason: err.reason, start: at };
  }
}

/**
 * Reads the body that begins at `from`: the payload and where it ends, or
 * how the reading stopped (a body delimited by close ends where the input
 * does when that is the peer closing, `eof`).
 */
function nextBody(
  framing: Framing,
  input: Buffer,
  start: number,
  from: number,
  eof: boolean,
): { body: Buffer; end: number } | OurOutcome {
  const reader = new BodyReader(framing);
  const parts: Buffer[] = [];
  let end: number;
  try {
    end = reader.scan(input, from, input.length, (b, s, e) => {
      parts.push(b.subarray(s, e));
    });
  } catch (err) {
    if (!(err instanceof HeadError)) throw err;
    return { kind: 'refused', reason: err.reason, start };
  }
  if (!reader.done && !(eof && framing.kind === 'close')) {
    return { kind: 'pending', start, consumed: end };
  }
  return { body: Buffer.concat(parts), end };
}

/** The proxy's reading of `input` as the requests of one client connection. */
export function ourRequests(input: Buffer, limits: ProxyLimits = DEFAULT_LIMITS): OurResult {
  const messages: OurMessage[] = [];
  const heads = new HeadReader(limits.maxHeaderBytes);
  const parse = (text: string) => parseRequestHead(text, limits.maxHeaderFields);
  let at = 0;
  while (at < input.length) {
    const found = nextHead(heads, input, at, parse);
    if ('kind' in found) return { messages, outcome: found };
    const head = found.head;
    const route = routeRequest(head);
    if (route.kind === 'refuse') {
      return { messages, outcome: { kind: 'refused', reason: route.reason, start: at } };
    }
    const message = {
      method: head.method,
      target: head.target,
      status: 0,
      minor: head.minor,
      headers: fieldPairs(head.fields),
      keepAlive: head.keepAlive,
    };
    if (route.kind === 'tunnel') {
      if (parseAuthority(head.target) === undefined) {
        return { messages, outcome: { kind: 'refused', reason: 'connect-target', start: at } };
      }
      messages.push({ ...message, body: Buffer.alloc(0), end: found.end });
      return { messages, outcome: { kind: 'tunnel', at: found.end } };
    }
    const body = nextBody(head.framing, input, at, found.end, false);
    if ('kind' in body) return { messages, outcome: body };
    messages.push({ ...message, ...body });
    at = body.end;
    // The health check closes a connection that sent a body with it; every other route
    // follows keep-alive.
    if (!head.keepAlive || (route.kind === 'health' && head.framing.kind !== 'none')) {
      return { messages, outcome: { kind: 'closed' } };
    }
  }
  return { messages, outcome: { kind: 'done' } };
}

/**
 * The proxy's reading of `input` as what an origin sent for a request with
 * `method`: interim answers, then the final one. With `eof`, the origin
 * closed after the input.
 */
export function ourResponses(input: Buffer, method: string, eof: boolean): OurResult {
  const messages: OurMessage[] = [];
  const heads = new HeadReader(64 * 1024);
  const parse = (text: string) => parseResponseHead(text, method);
  let at = 0;
  while (at < input.length) {
    const found = nextHead(heads, input, at, parse);
    if ('kind' in found) return { messages, outcome: found };
    const res = found.head;
    if (res.status === 101) {
      return { messages, outcome: { kind: 'refused', reason: 'switching-protocols', start: at } };
    }
    const body = nextBody(res.framing, input, at, found.end, eof);
    if ('kind' in body) return { messages, outcome: body };
    messages.push({
      method: '',
      target: '',
      status: res.status,
      minor: res.minor,
      headers: fieldPairs(res.fields),
      keepAlive: res.keepAlive,
      ...body,
    });
    at = body.end;
    if (res.status >= 200) return { messages, outcome: { kind: 'answered' } };
  }
  return { messages, outcome: { kind: 'done' } };
}

/** What llhttp and the proxy disagree on, and what the proxy refused that llhttp did not. */
export interface Comparison {
  /** Disagreements that must not happen: each a sentence. */
  readonly problems: string[];
  /** Set when the proxy refused a message llhttp accepted: the proxy's rule. */
  readonly extraRefusal: string | undefined;
}

const trimEnd = (v: string) => v.replace(/[ \t]+$/, '');

function sameMessage(o: OurMessage, l: LlResult['messages'][number], request: boolean): string[] {
  const out: string[] = [];
  if (request && (o.method !== l.method || o.target !== l.target)) {
    out.push(`request line: ours ${o.method} ${o.target}, llhttp ${l.method} ${l.target}`);
  }
  if (!request && o.status !== l.status) out.push(`status: ours ${o.status}, llhttp ${l.status}`);
  if (l.major !== 1 || o.minor !== l.minor)
    out.push(`version: ours 1.${o.minor}, llhttp ${l.major}.${l.minor}`);
  const oh = o.headers.map(([n, v]) => `${n}: ${trimEnd(v)}`).join('\n');
  const lh = l.headers.map(([n, v]) => `${n}: ${trimEnd(v)}`).join('\n');
  if (oh !== lh) out.push(`fields: ours ${JSON.stringify(oh)}, llhttp ${JSON.stringify(lh)}`);
  if (!o.body.equals(l.body))
    out.push(`body: ours ${o.body.length} bytes, llhttp ${l.body.length}`);
  if (o.end !== l.end) out.push(`end: ours ${o.end}, llhttp ${l.end}`);
  // The proxy may close where llhttp would go on, never the other way round.
  if (o.keepAlive && !l.keepAlive) out.push('ours keeps the connection open, llhttp does not');
  return out;
}

/**
 * Holds the proxy's reading of an input to llhttp's: requests (a whole
 * client stream), or responses (one exchange's answer).
 */
export function compare(kind: 'request' | 'response', ours: OurResult, ll: LlResult): Comparison {
  const problems: string[] = [];
  const request = kind === 'request';
  // After an upgrade (an Upgrade request, a CONNECT, a 101), llhttp reads no further. The proxy
  // ignores Upgrade (RFC 9110 §7.8) and reads on; llhttp has no view on what follows.
  const switched = ll.upgradeAt ?? Infinity;
  let start = 0;
  let i = 0;
  for (; i < ours.messages.length; i++) {
    const o = ours.messages[i] as OurMessage;
    const l = ll.messages[i];
    if (l === undefined) {
      if (start >= switched) return { problems, extraRefusal: undefined };
      const why = ll.error ? `refused at ${ll.error.at}: ${ll.error.reason}` : 'wants more';
      problems.push(`ours read message ${i} (to ${o.end}); llhttp ${why}`);
      return { problems, extraRefusal: undefined };
    }
    for (const p of sameMessage(o, l, request)) problems.push(`message ${i}: ${p}`);
    start = o.end;
  }
  const out = ours.outcome;
  if (out.kind === 'tunnel') {
    if (ll.upgradeAt !== out.at)
      problems.push(`CONNECT: ours tunnels at ${out.at}, llhttp at ${ll.upgradeAt}`);
    return { problems, extraRefusal: undefined };
  }
  if (start >= switched) return { problems, extraRefusal: undefined };
  const l = ll.messages[i];
  let extraRefusal: string | undefined;
  if (out.kind === 'refused') {
    // llhttp read the message, or had found nothing wrong with it when the input ended.
    if (l !== undefined || ll.error === undefined) extraRefusal = out.reason;
  } else if (out.kind === 'pending') {
    if (l !== undefined)
      problems.push(`message ${i}: llhttp ended it at ${l.end}, ours wants more`);
    else if (ll.error !== undefined && out.consumed > ll.error.at) {
      problems.push(
        `message ${i}: ours took bytes to ${out.consumed}, past llhttp's refusal at ${ll.error.at} (${ll.error.reason})`,
      );
    }
  }
  return { problems, extraRefusal };
}

/** Compares one origin answer to a request with `method` (the origin closed after it when `eof`). */
export function compareResponse(input: Buffer, method: string, eof = true): Comparison {
  return compare(
    'response',
    ourResponses(input, method, eof),
    llhttpParse('response', input, { methods: [method], eof }),
  );
}

/** Compares one client stream of requests. */
export function compareRequests(input: Buffer, limits: ProxyLimits = DEFAULT_LIMITS): Comparison {
  return compare('request', ourRequests(input, limits), llhttpParse('request', input));
}

/** The rules the README's table of refusals beyond llhttp names. */
export function documentedRefusals(): Set<string> {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const at = readme.indexOf('### Refusals beyond llhttp');
  const section = readme.slice(at, readme.indexOf('\n## ', at));
  return new Set([...section.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1] as string));
}
