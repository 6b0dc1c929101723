// Test support (not a test file): a seeded, deterministic generator of HTTP/1.1 inputs for the
// differential fuzzer: valid request streams and origin answers, each mutated a few times with
// the edits desync bugs are made of (line ends, whitespace, framing fields, chunk sizes and
// extensions, control bytes, duplicated and truncated lines). The same seed gives the same
// inputs, in the same order.

/** A small fast PRNG (mulberry32): deterministic for a seed. */
export class Random {
  #s: number;

  constructor(seed: number) {
    this.#s = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#s = (this.#s + 0x6d2b79f5) >>> 0;
    let t = this.#s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** One element of `xs`. */
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)] as T;
  }
}

/** Where requests in the inputs point (an origin the caller runs, or any name). */
export interface FuzzTarget {
  /** `host:port` of the absolute URIs. */
  readonly authority: string;
}

function requestSeeds(t: FuzzTarget): string[] {
  const u = (p: string) => `http://${t.authority}${p}`;
  const h = `Host: ${t.authority}\r\n`;
  return [
    `GET ${u('/a')} HTTP/1.1\r\n${h}\r\n`,
    `GET ${u('/a?x=1')} HTTP/1.1\r\n${h}Accept: */*\r\nUser-Agent: fuzz\r\n\r\n`,
    `HEAD ${u('/h')} HTTP/1.1\r\n${h}\r\n`,
    `POST ${u('/p')} HTTP/1.1\r\n${h}Content-Length: 5\r\n\r\nhello`,
    `PUT ${u('/p')} HTTP/1.1\r\n${h}Content-Type: text/plain\r\nContent-Length: 0\r\n\r\n`,
    `POST ${u('/c')} HTTP/1.1\r\n${h}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
    `POST ${u('/c')} HTTP/1.1\r\n${h}Transfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n`,
    `POST ${u('/g')} HTTP/1.1\r\n${h}Transfer-Encoding: gzip, chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n`,
    `GET ${u('/1')} HTTP/1.1\r\n${h}\r\nGET ${u('/2')} HTTP/1.1\r\n${h}\r\n`,
    `POST ${u('/1')} HTTP/1.1\r\n${h}Content-Length: 3\r\n\r\nabcGET ${u('/2')} HTTP/1.1\r\n${h}\r\n`,
    `POST ${u('/1')} HTTP/1.1\r\n${h}Transfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\nGET ${u('/2')} HTTP/1.1\r\n${h}\r\n`,
    `GET ${u('/0')} HTTP/1.0\r\n${h}\r\n`,
    `GET ${u('/0')} HTTP/1.0\r\n${h}Connection: keep-alive\r\n\r\nGET ${u('/1')} HTTP/1.0\r\n${h}\r\n`,
    `GET ${u('/k')} HTTP/1.1\r\n${h}Connection: close\r\n\r\nGET ${u('/after')} HTTP/1.1\r\n${h}\r\n`,
    `POST ${u('/e')} HTTP/1.1\r\n${h}Expect: 100-continue\r\nContent-Length: 2\r\n\r\nok`,
    `OPTIONS ${u('/')} HTTP/1.1\r\n${h}Connection: X-A\r\nX-A: 1\r\nKeep-Alive: 5\r\n\r\n`,
    `DELETE ${u('/d')} HTTP/1.1\r\n${h}Via: 1.1 elsewhere\r\n\r\n`,
  ];
}

/** Origin answers, each with the method of the request it answers. */
const RESPONSE_SEEDS: readonly [string, string][] = [
  ['GET', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello'],
  ['GET', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n'],
  [
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a="b"\r\nhi\r\n0\r\nX: y\r\n\r\n',
  ],
  ['GET', 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close'],
  ['GET', 'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok'],
  ['GET', 'HTTP/1.1 204 No Content\r\n\r\n'],
  ['GET', 'HTTP/1.1 304 Not Modified\r\nETag: "x"\r\n\r\n'],
  ['HEAD', 'HTTP/1.1 200 OK\r\nContent-Length: 123\r\n\r\n'],
  ['GET', 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na'],
  [
    'GET',
    'HTTP/1.1 103 Early Hints\r\nLink: </s>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
  ],
  ['GET', 'HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 3\r\n\r\nno!'],
  ['GET', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzipped until close'],
];

/** Byte strings the mutations insert: what framing and desync bugs are made of. */
const TOKENS: readonly string[] = [
  '\r\n',
  '\r',
  '\n',
  ' ',
  '\t',
  '\0',
  ',',
  ';',
  '=',
  '"',
  '\\',
  ':',
  '\x7f',
  '\xff',
  '\x0b',
  '\r\n\r\n',
  ' \r\n',
  '\r\n ',
  '\n\r\n',
  'chunked',
  ' chunked',
  'chunked, ',
  ', chunked',
  'identity',
  'gzip',
  'Transfer-Encoding: chunked\r\n',
  'Transfer-Encoding: gzip\r\n',
  'Transfer-Encoding : chunked\r\n',
  'Transfer-Encoding:\tchunked\r\n',
  'Content-Length: 5\r\n',
  'Content-Length: 0\r\n',
  'Content-Length: 3, 3\r\n',
  'Content-Length: +3\r\n',
  '0',
  '00',
  '1',
  'f',
  'ff',
  'FFFFFFFFFFFFFFFFF',
  '-',
  '+',
  '0x',
  'Connection: close\r\n',
  'Connection: keep-alive\r\n',
  'Connection: upgrade\r\nUpgrade: websocket\r\n',
  'HTTP/1.0',
  'HTTP/1.1',
  'HTTP/2.0',
  'Host: other\r\n',
  'Expect: 100-continue\r\n',
  'Expect: nothing\r\n',
  '0\r\n\r\n',
  '5\r\nhello\r\n',
  ';a=b',
  ';a="c d"',
  'X: y\r\n',
  'GET ',
  'POST ',
  'http://',
];

function mutate(r: Random, input: string): string {
  let s = input;
  const edits = 1 + r.int(3);
  for (let e = 0; e < edits; e++) {
    const at = r.int(s.length + 1);
    switch (r.int(9)) {
      case 0:
      case 1:
      case 2:
        s = s.slice(0, at) + r.pick(TOKENS) + s.slice(at);
        break;
      case 3:
        s = s.slice(0, at) + s.slice(at + 1 + r.int(6));
        break;
      case 4:
        s = s.slice(0, at) + String.fromCharCode(r.int(256)) + s.slice(at + 1);
        break;
      case 5: {
        // A whole line again, right after itself.
        const start = s.lastIndexOf('\n', at - 1) + 1;
        const end = s.indexOf('\n', at);
        if (end > start) s = s.slice(0, end + 1) + s.slice(start, end + 1) + s.slice(end + 1);
        break;
      }
      case 6: {
        const n = 1 + r.int(12);
        const part = s.slice(at, at + n);
        const flipped = r.int(2) === 0 ? part.toUpperCase() : part.toLowerCase();
        s = s.slice(0, at) + flipped + s.slice(at + n);
        break;
      }
      case 7:
        if (r.int(4) === 0) s = s.slice(0, at); // truncated
        break;
      default: {
        // A digit changed: lengths and sizes that no longer match.
        const digits = [...s.matchAll(/\d/g)];
        const d = digits.length > 0 ? r.pick(digits) : undefined;
        if (d?.index !== undefined) {
          s = s.slice(0, d.index) + r.pick(['0', '1', '4', '6', '9', 'a']) + s.slice(d.index + 1);
        }
      }
    }
  }
  return s;
}

/** One request input: a valid client stream, mutated (sometimes left as it is). */
export function fuzzRequest(r: Random, t: FuzzTarget): Buffer {
  const seeds = requestSeeds(t);
  let s = r.pick(seeds);
  if (r.int(5) === 0) s += r.pick(seeds); // pipelined
  if (r.int(10) !== 0) s = mutate(r, s);
  return Buffer.from(s, 'latin1');
}

/** One origin answer and the method of its request, mutated (sometimes left as it is). */
export function fuzzResponse(r: Random): { method: string; input: Buffer } {
  const [method, seed] = r.pick(RESPONSE_SEEDS);
  const s = r.int(10) === 0 ? seed : mutate(r, seed);
  return { method: r.int(8) === 0 ? 'HEAD' : method, input: Buffer.from(s, 'latin1') };
}
