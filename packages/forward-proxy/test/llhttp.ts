// Test support (not a test file): llhttp, the parser Node.js's own HTTP/1.1 stack runs, as a
// differential oracle. Node.js 24 exposes no HTTP parser binding without flags
// (`process.binding('http_parser')` is gone, `internalBinding` needs --expose-internals), so this
// runs the WebAssembly build of llhttp that undici ships (`undici/lib/llhttp/llhttp-wasm.js`,
// the build undici's own HTTP/1.1 client parses with), strict: no lenient flag is set.
//
// `llhttpParse(kind, input)` reads a whole byte string as a stream of messages and says, for each
// message it read, where it ended and what it held; and where and why it stopped.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const WASM = require('undici/lib/llhttp/llhttp-wasm.js') as Uint8Array;
const C = require('undici/lib/llhttp/constants.js') as {
  ERROR: Record<string, number>;
  TYPE: { REQUEST: number; RESPONSE: number };
};

/** One message as llhttp read it. */
export interface LlMessage {
  /** Request only: the method and the request target. */
  readonly method: string;
  readonly target: string;
  /** Response only: the status code and the reason phrase. */
  readonly status: number;
  readonly reason: string;
  readonly major: number;
  readonly minor: number;
  /** Header fields as [name, value], in order, as llhttp delimited them. */
  readonly headers: [string, string][];
  /** Trailer fields of a chunked body. */
  readonly trailers: [string, string][];
  /** The body's payload (chunked framing removed). */
  readonly body: Buffer;
  /** llhttp says the connection may carry another message after this one. */
  readonly keepAlive: boolean;
  /** The input offset just past the message. */
  readonly end: number;
}

/** What llhttp made of an input. */
export interface LlResult {
  /** The messages read completely, in order. */
  readonly messages: LlMessage[];
  /** Where llhttp refused the input, and why; undefined when it did not. */
  readonly error:
    | { readonly code: string; readonly reason: string; readonly at: number }
    | undefined;
  /** True when the input ended inside a message (more bytes needed). */
  readonly pending: boolean;
  /**
   * Set when llhttp stopped because a message switched protocols (an Upgrade or CONNECT
   * request): the offset where the other protocol begins.
   */
  readonly upgradeAt: number | undefined;
}

/** The little of the WebAssembly API used here (the TypeScript lib in use declares none). */
interface Wasm {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
}
const { WebAssembly } = globalThis as unknown as { WebAssembly: Wasm };

interface Exports {
  memory: { buffer: ArrayBuffer };
  malloc(n: number): number;
  free(p: number): void;
  llhttp_alloc(type: number): number;
  llhttp_free(p: number): void;
  llhttp_execute(p: number, data: number, len: number): number;
  llhttp_finish(p: number): number;
  llhttp_resume(p: number): void;
  llhttp_resume_after_upgrade(p: number): void;
  llhttp_get_error_pos(p: number): number;
  llhttp_get_error_reason(p: number): number;
  llhttp_errno_name(e: number): number;
  llhttp_get_method(p: number): number;
  llhttp_method_name(m: number): number;
  llhttp_get_http_major(p: number): number;
  llhttp_get_http_minor(p: number): number;
  llhttp_message_needs_eof(p: number): number;
  llhttp_should_keep_alive(p: number): number;
}

/** The parse the callbacks below write into. */
interface State {
  base: number;
  input: Buffer;
  /** Response only: the request method each message answers, in order. */
  methods: readonly string[];
  messages: LlMessage[];
  cur: Current;
  begun: boolean;
}

/** The message being read. */
interface Current {
  method?: string;
  target?: string;
  status?: number;
  reason?: string;
  major?: number;
  minor?: number;
  keepAlive?: boolean;
  headers: [string, string][];
  trailers: [string, string][];
  body: Buffer[];
  inHeaders: boolean;
  lastWasValue: boolean;
}

let state: State | undefined;
let ex: Exports;

const span = (at: number, len: number): Buffer => {
  const s = state as State;
  return s.input.subarray(at - s.base, at - s.base + len);
};

function fresh(): Current {
  return { headers: [], trailers: [], body: [], inHeaders: true, lastWasValue: false };
}

function onField(at: number, len: number, value: boolean): number {
  const s = state as State;
  const list = s.cur.inHeaders ? s.cur.headers : s.cur.trailers;
  const text = span(at, len).toString('latin1');
  if (!value) {
    if (s.cur.lastWasValue || list.length === 0) list.push([text, '']);
    else {
      const last = list[list.length - 1] as [string, string];
      last[0] += text;
    }
    s.cur.lastWasValue = false;
  } else {
    const last = list[list.length - 1] as [string, string];
    last[1] += text;
    s.cur.lastWasValue = true;
  }
  return 0;
}

const instance = new WebAssembly.Instance(new WebAssembly.Module(WASM), {
  env: {
    wasm_on_message_begin: () => {
      const s = state as State;
      s.cur = fresh();
      s.begun = true;
      return 0;
    },
    wasm_on_url: (_p: number, at: number, len: number) => {
      const s = state as State;
      s.cur.target = (s.cur.target ?? '') + span(at, len).toString('latin1');
      return 0;
    },
    wasm_on_status: (_p: number, at: number, len: number) => {
      const s = state as State;
      s.cur.reason = (s.cur.reason ?? '') + span(at, len).toString('latin1');
      return 0;
    },
    wasm_on_header_field: (_p: number, at: number, len: number) => onField(at, len, false),
    wasm_on_header_value: (_p: number, at: number, len: number) => onField(at, len, true),
    wasm_on_headers_complete: (p: number, status: number, _upgrade: number, keep: number) => {
      const s = state as State;
      s.cur.inHeaders = false;
      s.cur.lastWasValue = false;
      s.cur.status = status;
      s.cur.keepAlive = keep === 1;
      s.cur.major = ex.llhttp_get_http_major(p);
      s.cur.minor = ex.llhttp_get_http_minor(p);
      s.cur.method =
        s.methods.length === 0 ? cString(ex.llhttp_method_name(ex.llhttp_get_method(p))) : '';
      // A response to HEAD has no body, whatever its fields say: llhttp is told so (1).
      const answers = s.methods[s.messages.length];
      return answers === 'HEAD' && status >= 200 ? 1 : 0;
    },
    wasm_on_body: (_p: number, at: number, len: number) => {
      const s = state as State;
      s.cur.body.push(Buffer.from(span(at, len)));
      return 0;
    },
    wasm_on_message_complete: (p: number) => {
      // Asked now, not with the head: a response to HEAD is bodiless only once llhttp was told.
      (state as State).cur.keepAlive = ex.llhttp_should_keep_alive(p) === 1;
      // Paused here, so that the offset just past the message is known (llhttp_get_error_pos).
      return C.ERROR.PAUSED as number;
    },
  },
});
ex = instance.exports as unknown as Exports;

function cString(p: number): string {
  if (p === 0) return '';
  const mem = new Uint8Array(ex.memory.buffer);
  let end = p;
  while (mem[end] !== 0) end++;
  return Buffer.from(mem.subarray(p, end)).toString('latin1');
}

function complete(s: State, end: number, keepAlive?: boolean): void {
  const c = s.cur;
  s.messages.push({
    method: c.method ?? '',
    target: c.target ?? '',
    status: c.status ?? 0,
    reason: c.reason ?? '',
    major: c.major ?? 0,
    minor: c.minor ?? 0,
    headers: c.headers,
    trailers: c.trailers,
    body: Buffer.concat(c.body),
    keepAlive: keepAlive ?? c.keepAlive ?? false,
    end,
  });
  s.begun = false;
  s.cur = fresh();
}

/**
 * Reads `input` as llhttp does: requests, or responses to `methods` (one request method per
 * response, in order; a 1xx answer does not use one up). With `eof`, the input is everything the
 * peer sent before it closed (a response delimited by close ends there).
 */
export function llhttpParse(
  kind: 'request' | 'response',
  input: Buffer,
  opts: { methods?: readonly string[]; eof?: boolean } = {},
): LlResult {
  const p = ex.llhttp_alloc(kind === 'request' ? C.TYPE.REQUEST : C.TYPE.RESPONSE);
  const base = ex.malloc(Math.max(1, input.length));
  new Uint8Array(ex.memory.buffer, base, input.length).set(input);
  const methods = kind === 'response' ? (opts.methods ?? []) : [];
  // A 1xx answer is a message of its own to llhttp but answers no request: the method list is
  // indexed by final answers only, so interim ones get a placeholder as they come.
  const s: State = { base, input, methods: [...methods], messages: [], cur: fresh(), begun: false };
  state = s;
  let error: LlResult['error'];
  let upgradeAt: number | undefined;
  try {
    let at = 0;
    for (;;) {
      const ret = ex.llhttp_execute(p, base + at, input.length - at);
      if (ret === C.ERROR.OK) break;
      const pos = ex.llhttp_get_error_pos(p) - base;
      if (ret === C.ERROR.PAUSED) {
        const status = s.cur.status ?? 0;
        complete(s, pos);
        if (kind === 'response' && status >= 100 && status < 200) {
          (s.methods as string[]).splice(s.messages.length - 1, 0, '');
        }
        ex.llhttp_resume(p);
        at = pos;
        continue;
      }
      if (ret === C.ERROR.PAUSED_UPGRADE) {
        // The message before the switch is complete (or was paused as such already).
        if (s.begun) complete(s, pos);
        upgradeAt = pos;
        break;
      }
      error = {
        code: cString(ex.llhttp_errno_name(ret)),
        reason: cString(ex.llhttp_get_error_reason(p)),
        at: pos,
      };
      break;
    }
    if (error === undefined && upgradeAt === undefined && opts.eof === true && s.begun) {
      const ret = ex.llhttp_finish(p);
      if (ret === C.ERROR.OK || ret === C.ERROR.PAUSED) {
        if (s.begun) complete(s, input.length, false);
      } else {
        error = {
          code: cString(ex.llhttp_errno_name(ret)),
          reason: cString(ex.llhttp_get_error_reason(p)),
          at: input.length,
        };
      }
    }
    return { messages: s.messages, error, pending: s.begun && error === undefined, upgradeAt };
  } finally {
    state = undefined;
    ex.free(base);
    ex.llhttp_free(p);
  }
}
