// Peer: the proxy program (bin/proxy-server.js) spawned as a child process; raw-socket clients;
// a raw TCP origin that reads what reaches it with llhttp (as a Node.js server would). The
// request smuggling and response splitting corpus: each desync family, what the client gets,
// and what the origin reads. In every case the origin reads cleanly (llhttp refuses nothing
// the proxy forwarded) and exactly the messages the proxy meant to send.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { llhttpParse } from './llhttp.js';
import {
  exchange,
  type RecordingOrigin,
  startProxyAndOrigin,
  stopProxyAndOrigin,
} from './origins.js';
import { freePort, type RunningProxy } from './support.js';

const ADDRESS = '127.0.4.40';

let origin: RecordingOrigin;
let proxy: RunningProxy;
let O: string;

beforeAll(async () => {
  ({ origin, proxy, base: O } = await startProxyAndOrigin(ADDRESS));
}, 30_000);

afterEach(() => {
  // Whatever a case sent, the origin read it without a refusal.
  expect(origin.refusals).toEqual([]);
  origin.reset();
});

afterAll(() => stopProxyAndOrigin({ origin, proxy }));

/** Sends `text` on one connection; the statuses of the answers, in order, and their bodies. */
async function send(
  text: string,
  methods: string[] = ['GET', 'GET', 'GET'],
): Promise<{ statuses: number[]; bodies: string[]; raw: string }> {
  const { text: raw, timedOut } = await exchange(proxy, text);
  expect(timedOut, 'the proxy closed the connection').toBe(false);
  const r = llhttpParse('response', Buffer.from(raw, 'latin1'), { methods, eof: true });
  expect(r.error, `the answers read cleanly: ${JSON.stringify(raw)}`).toBeUndefined();
  const finals = r.messages.filter((m) => m.status >= 200 || m.status === 100);
  return {
    statuses: finals.map((m) => m.status),
    bodies: finals.map((m) => m.body.toString('latin1')),
    raw,
  };
}

/** What the origin read: method, origin-form target and body of each request. */
function seen(): string[] {
  return origin.requests.map(
    (r) => `${r.method} ${r.target} ${JSON.stringify(r.body.toString('latin1'))}`,
  );
}

describe('CL.TE and TE.CL: both framing fields', () => {
  it('CL.TE: Content-Length and Transfer-Encoding: 400, nothing forwarded', async () => {
    const r = await send(
      `POST ${O}/ HTTP/1.1\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGPOST ${O}/smuggled HTTP/1.1\r\n\r\n`,
    );
    expect(r.statuses).toEqual([400]);
    expect(seen()).toEqual([]);
  });

  it('TE.CL: Transfer-Encoding and Content-Length: 400, nothing forwarded', async () => {
    const r = await send(
      `POST ${O}/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n`,
    );
    expect(r.statuses).toEqual([400]);
    expect(seen()).toEqual([]);
  });
});

describe('TE.TE: obfuscated Transfer-Encoding values', () => {
  const refused: [string, string][] = [
    ['xchunked', 'Transfer-Encoding: xchunked'],
    ['a space before the colon', 'Transfer-Encoding : chunked'],
    ['a tab after chunked', 'Transfer-Encoding: chunked\t'],
    ['chunked, then identity', 'Transfer-Encoding: chunked, identity'],
    [
      'chunked on one line, something else on the next',
      'Transfer-Encoding: chunked\r\nTransfer-Encoding: x',
    ],
    ['chunked twice', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked'],
    ['an obs-fold continuation', 'Transfer-Encoding:\r\n chunked'],
    ['a NUL after chunked', 'Transfer-Encoding: chunked\0'],
    ['a vertical tab', 'Transfer-Encoding:\x0bchunked'],
  ];
  for (const [name, field] of refused) {
    it(`${name}: 400, nothing forwarded`, async () => {
      const r = await send(`POST ${O}/te HTTP/1.1\r\n${field}\r\n\r\n5\r\nhello\r\n0\r\n\r\n`);
      expect(r.statuses).toEqual([400]);
      expect(seen()).toEqual([]);
    });
  }

  const accepted: [string, string][] = [
    ['a leading space', 'Transfer-Encoding:  chunked'],
    ['a leading tab', 'Transfer-Encoding:\tchunked'],
    ['upper case', 'Transfer-Encoding: CHUNKED'],
    ['a trailing space', 'Transfer-Encoding: chunked '],
    ['two lines ending in chunked', 'Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked'],
  ];
  for (const [name, field] of accepted) {
    it(`${name}: read as chunked and forwarded with one normalised Transfer-Encoding`, async () => {
      const r = await send(`POST ${O}/te HTTP/1.1\r\n${field}\r\n\r\n5\r\nhello\r\n0\r\n\r\n`);
      expect(r.statuses).toEqual([200]);
      expect(seen()).toEqual(['POST /te "hello"']);
      const te = origin.requests[0]?.headers.filter(
        ([n]) => n.toLowerCase() === 'transfer-encoding',
      );
      expect(te?.map(([, v]) => v)).toEqual([field.includes('gzip') ? 'gzip, chunked' : 'chunked']);
    });
  }
});

describe('Content-Length: duplicated, comma-joined, signed', () => {
  for (const [name, fields] of [
    ['two equal lines', 'Content-Length: 5\r\nContent-Length: 5'],
    ['two different lines', 'Content-Length: 5\r\nContent-Length: 6'],
    ['comma-joined equal values', 'Content-Length: 5, 5'],
    ['a sign', 'Content-Length: +5'],
    ['a tab after the number', 'Content-Length: 5\t'],
  ] as const) {
    it(`${name}: 400, nothing forwarded`, async () => {
      const r = await send(`POST ${O}/cl HTTP/1.1\r\n${fields}\r\n\r\nhello`);
      expect(r.statuses).toEqual([400]);
      expect(seen()).toEqual([]);
    });
  }

  it('leading zeros: read as the number, forwarded as the number', async () => {
    const r = await send(`POST ${O}/cl HTTP/1.1\r\nContent-Length: 005\r\n\r\nhello`);
    expect(r.statuses).toEqual([200]);
    expect(seen()).toEqual(['POST /cl "hello"']);
    expect(origin.requests[0]?.headers).toContainEqual(['Content-Length', '5']);
  });
});

describe('chunk sizes and extensions', () => {
  const chunked = (body: string) =>
    `POST ${O}/ch HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n${body}GET ${O}/next HTTP/1.1\r\n\r\n`;
  for (const [name, body] of [
    ['a negative size', '-5\r\nhello\r\n0\r\n\r\n'],
    ['a signed size', '+5\r\nhello\r\n0\r\n\r\n'],
    ['a 0x prefix', '0x5\r\nhello\r\n0\r\n\r\n'],
    ['a size past 2^64', '10000000000000005\r\nhello\r\n0\r\n\r\n'],
    ['a space after the size', '5 \r\nhello\r\n0\r\n\r\n'],
    ['whitespace before an extension', '5 ;a=b\r\nhello\r\n0\r\n\r\n'],
    ['a bare LF after the size', '5\nhello\r\n0\r\n\r\n'],
    ['data longer than its size', '4\r\nhello\r\n0\r\n\r\n'],
    ['a trailer that is no field line', '5\r\nhello\r\n0\r\nnot a field\r\n\r\n'],
    ['Content-Length in the trailers', '5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n'],
  ] as const) {
    it(`${name}: the answer is 400 or the connection is cut; the next request is never read`, async () => {
      const { text: raw } = await exchange(proxy, chunked(body));
      expect(raw === '' || raw.startsWith('HTTP/1.1 400 '), raw).toBe(true);
      // The origin may have the chunks before the bad byte; it never gets a whole request.
      expect(seen()).toEqual([]);
    });
  }

  it('leading zeros, extensions and trailers: forwarded as they came, read the same by the origin', async () => {
    const body = '0005;name=value;q="quoted \\" string"\r\nhello\r\n00\r\nX-Trailer: 1\r\n\r\n';
    const r = await send(chunked(body));
    expect(r.statuses).toEqual([200, 200]);
    expect(seen()).toEqual(['POST /ch "hello"', 'GET /next ""']);
    expect(origin.requests[0]?.trailers).toEqual([['X-Trailer', '1']]);
  });
});

describe('bare CR, bare LF, NUL, obs-fold, whitespace around names', () => {
  for (const [name, head] of [
    ['a bare CR in a field value', 'X: a\rb'],
    ['a bare LF ending a field line', 'X: a\nY: b'],
    ['a NUL in a field value', 'X: a\0b'],
    ['an obs-fold line', 'X: a\r\n b'],
    ['whitespace before the colon', 'X : a'],
    ['whitespace before the name', ' X: a'],
    ['a tab inside the name', 'X\tY: a'],
  ] as const) {
    it(`${name}: 400, nothing forwarded, later requests never read`, async () => {
      const r = await send(`GET ${O}/a HTTP/1.1\r\n${head}\r\n\r\nGET ${O}/b HTTP/1.1\r\n\r\n`);
      expect(r.statuses).toEqual([400]);
      expect(seen()).toEqual([]);
    });
  }

  it('a bare LF refuses the head at once, before it is complete', async () => {
    const { text: raw, timedOut } = await exchange(proxy, `GET ${O}/a HTTP/1.1\nHost: x`, {
      halfClose: false,
      timeoutMs: 5_000,
    });
    expect(timedOut).toBe(false);
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
  });
});

describe('Expect and Upgrade', () => {
  it('Expect: 100-continue: 100 first, the request forwarded once with its body', async () => {
    const r = await send(
      `POST ${O}/e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello`,
      ['POST'],
    );
    expect(r.statuses).toEqual([100, 200]);
    expect(seen()).toEqual(['POST /e "hello"']);
  });

  it('Expect: 100-continue from an HTTP/1.0 client is ignored (no 100)', async () => {
    const r = await send(
      `POST ${O}/e HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello`,
    );
    expect(r.statuses).toEqual([200]);
  });

  it('an Expect other than 100-continue: 417, nothing forwarded', async () => {
    const r = await send(
      `POST ${O}/e HTTP/1.1\r\nExpect: 200-ok\r\nContent-Length: 5\r\n\r\nhello`,
    );
    expect(r.statuses).toEqual([417]);
    expect(seen()).toEqual([]);
  });

  it('Upgrade is dropped: the origin never switches, what follows is read as the next request', async () => {
    const r = await send(
      `GET ${O}/u HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nGET ${O}/after HTTP/1.1\r\n\r\n`,
    );
    expect(r.statuses).toEqual([200, 200]);
    expect(seen()).toEqual(['GET /u ""', 'GET /after ""']);
    const names = origin.requests[0]?.headers.map(([n]) => n.toLowerCase());
    expect(names).not.toContain('upgrade');
    expect(names).toContain('connection'); // the proxy's own keep-alive, nothing else
    expect(origin.requests[0]?.headers).toContainEqual(['Connection', 'keep-alive']);
  });

  it('an origin that answers 101 anyway: 502, nothing of its answer passed on', async () => {
    origin.answer = () => ({
      bytes:
        'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nRAW',
    });
    const r = await send(`GET ${O}/u101 HTTP/1.1\r\n\r\n`);
    expect(r.statuses).toEqual([502]);
    expect(r.raw).not.toContain('RAW');
  });
});

describe('absolute-form and Host', () => {
  it('the URI wins: the origin gets one Host, from the URI', async () => {
    const r = await send(`GET ${O}/h HTTP/1.1\r\nHost: evil.example\r\n\r\n`);
    expect(r.statuses).toEqual([200]);
    const hosts = origin.requests[0]?.headers.filter(([n]) => n.toLowerCase() === 'host');
    expect(hosts).toEqual([['Host', `127.0.0.1:${origin.port}`]]);
  });

  it('two Host lines: 400, nothing forwarded', async () => {
    const r = await send(`GET ${O}/h HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n`);
    expect(r.statuses).toEqual([400]);
    expect(seen()).toEqual([]);
  });

  it('userinfo in the URI is never forwarded', async () => {
    const r = await send(`GET http://user:pw@127.0.0.1:${origin.port}/u HTTP/1.1\r\n\r\n`);
    expect(r.statuses).toEqual([200]);
    expect(JSON.stringify(origin.requests[0]?.headers)).not.toContain('user');
  });
});

describe('HTTP/1.0 keep-alive', () => {
  it('with keep-alive, both requests are answered on one connection', async () => {
    const r = await send(
      `GET ${O}/1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET ${O}/2 HTTP/1.0\r\n\r\n`,
    );
    expect(r.statuses).toEqual([200, 200]);
    expect(r.raw).toContain('Connection: keep-alive');
    expect(seen()).toEqual(['GET /1 ""', 'GET /2 ""']);
  });

  it('without it, the connection ends after the first; the second is never read', async () => {
    const r = await send(`GET ${O}/1 HTTP/1.0\r\n\r\nGET ${O}/2 HTTP/1.0\r\n\r\n`);
    expect(r.statuses).toEqual([200]);
    expect(seen()).toEqual(['GET /1 ""']);
  });

  it('keep-alive with a tab after it is no keep-alive (as llhttp reads it)', async () => {
    const r = await send(
      `GET ${O}/1 HTTP/1.0\r\nConnection: keep-alive\t\r\n\r\nGET ${O}/2 HTTP/1.0\r\n\r\n`,
    );
    expect(r.statuses).toEqual([200]);
    expect(seen()).toEqual(['GET /1 ""']);
  });
});

describe('pipelined requests after a refused one', () => {
  it('the ones before it are answered, it gets 400, none after it is read', async () => {
    const r = await send(
      `GET ${O}/1 HTTP/1.1\r\n\r\nGET ${O}/2 HTTP/1.1\r\nBad Header\r\n\r\nGET ${O}/3 HTTP/1.1\r\n\r\n`,
    );
    expect(r.statuses).toEqual([200, 400]);
    expect(seen()).toEqual(['GET /1 ""']);
  });

  it('a refused body framing ends the connection before the bytes after it', async () => {
    const r = await send(
      `POST ${O}/1 HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nabGET ${O}/2 HTTP/1.1\r\n\r\n`,
    );
    expect(r.statuses).toEqual([400]);
    expect(seen()).toEqual([]);
  });
});

describe("the proxy's own answers to HEAD", () => {
  it('carry no body, so the next answer on the connection is read where it begins', async () => {
    const closed = await freePort('127.0.0.1');
    const { text: raw } = await exchange(
      proxy,
      `HEAD ${O}/h HTTP/1.1\r\n\r\nHEAD http://127.0.0.1:${closed}/refused HTTP/1.1\r\n\r\n`,
    );
    const r = llhttpParse('response', Buffer.from(raw, 'latin1'), {
      methods: ['HEAD', 'HEAD'],
      eof: true,
    });
    expect(r.error).toBeUndefined();
    expect(r.messages.map((m) => [m.status, m.body.length])).toEqual([
      [200, 0],
      [502, 0],
    ]);
  });

  it('a 417 to HEAD is a head alone', async () => {
    const { text: raw } = await exchange(proxy, `HEAD ${O}/h HTTP/1.1\r\nExpect: soon\r\n\r\n`);
    expect(raw).toMatch(/^HTTP\/1\.1 417 [\s\S]*\r\n\r\n$/);
  });
});

describe('origin answers that could be framed two ways are not passed on', () => {
  for (const [name, bytes] of [
    [
      'Transfer-Encoding and Content-Length',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n',
    ],
    [
      'two Content-Length lines',
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello',
    ],
    [
      'a 1xx with a Content-Length',
      'HTTP/1.1 150 Odd\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
    ],
    ['chunked twice', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n'],
    ['a bare LF in the head', 'HTTP/1.1 200 OK\nContent-Length: 2\r\n\r\nok'],
    ['a NUL in a field', 'HTTP/1.1 200 OK\r\nX: a\0b\r\nContent-Length: 2\r\n\r\nok'],
  ] as const) {
    it(`${name}: 502, nothing of it passed on, the connection to the origin not kept`, async () => {
      origin.answer = () => ({ bytes });
      const r = await send(`GET ${O}/bad HTTP/1.1\r\n\r\n`);
      expect(r.statuses).toEqual([502]);
      origin.answer = (req) => ({
        bytes: `HTTP/1.1 200 OK\r\nContent-Length: ${req.target.length}\r\n\r\n${req.target}`,
      });
      const next = await send(`GET ${O}/good HTTP/1.1\r\n\r\n`);
      expect(next.bodies).toEqual(['/good']);
      // The connection that carried the bad answer is closed, never handed to the next request.
      expect(origin.requests.at(-1)?.conn).not.toBe(origin.requests.at(-2)?.conn);
    });
  }

  it('an answer followed by more bytes: the answer passes, the bytes after it never do, the connection goes', async () => {
    origin.answer = () => ({
      bytes:
        'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled',
    });
    const r = await send(`GET ${O}/split HTTP/1.1\r\n\r\nGET ${O}/split2 HTTP/1.1\r\n\r\n`);
    expect(r.bodies).toEqual(['hello', 'hello']);
    expect(r.raw).not.toContain('smuggled');
    const [a, b] = origin.requests;
    expect(a?.conn).not.toBe(b?.conn);
  });

  it('a malformed chunked answer is cut at the bad byte: the client never reads past it', async () => {
    origin.answer = () => ({
      bytes:
        'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n5 \r\nworld\r\n0\r\n\r\n',
    });
    const { text: raw } = await exchange(proxy, `GET ${O}/cut HTTP/1.1\r\n\r\n`);
    // Nothing past the bad byte (here nothing of the chunk it came with) reaches the client.
    expect(raw).toMatch(/^HTTP\/1\.1 200 /);
    expect(raw).not.toContain('world');
    const r = llhttpParse('response', Buffer.from(raw, 'latin1'), { methods: ['GET'], eof: true });
    expect(r.messages).toEqual([]); // incomplete: the client sees a cut answer, never a whole one
  });
});
