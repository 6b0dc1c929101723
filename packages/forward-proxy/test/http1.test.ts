// Peer: none (pure functions): the proxy's HTTP/1.1 head parser, URI parser and chunked-body
// scanner, on byte strings written after RFC 9112's examples.
import { describe, expect, it } from 'vitest';
import { ChunkedScanner } from '../src/chunked.js';
import { endToEndFields, HeadError, parseRequestHead, parseResponseHead } from '../src/http1.js';
import { HeadReader } from '../src/reader.js';
import { parseHttpTarget } from '../src/target.js';

describe('request heads', () => {
  it('reads method, target, version, fields (raw names kept) and framing', () => {
    const h = parseRequestHead(
      'POST http://example.test/a?b HTTP/1.1\r\nHost: x\r\nX-Mixed-Case:  spaced value \t\r\n' +
        'Content-Length: 5',
    );
    expect(h.method).toBe('POST');
    expect(h.target).toBe('http://example.test/a?b');
    expect(h.minor).toBe(1);
    expect(h.fields.names).toEqual(['Host', 'X-Mixed-Case', 'Content-Length']);
    expect(h.fields.values).toEqual(['x', 'spaced value', '5']);
    expect(h.framing).toEqual({ kind: 'length', length: 5 });
    expect(h.keepAlive).toBe(true);
  });

  it('knows keep-alive by version and Connection tokens', () => {
    expect(parseRequestHead('GET / HTTP/1.1\r\nConnection: close').keepAlive).toBe(false);
    expect(parseRequestHead('GET / HTTP/1.0').keepAlive).toBe(false);
    expect(parseRequestHead('GET / HTTP/1.0\r\nConnection: Keep-Alive').keepAlive).toBe(true);
    expect(parseRequestHead('GET / HTTP/1.1\r\nConnection: x-a, X-B').connection).toEqual([
      'x-a',
      'x-b',
    ]);
  });

  it('takes a chunked Transfer-Encoding, its codings normalised, and refuses a repeated Content-Length as llhttp does', () => {
    // llhttp refuses `Content-Length: 3, 3` and two equal lines alike, so the proxy does too.
    expect(() => parseRequestHead('PUT / HTTP/1.1\r\nContent-Length: 3, 3')).toThrow(HeadError);
    expect(() =>
      parseRequestHead('PUT / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3'),
    ).toThrow(HeadError);
    const te = parseRequestHead(
      'PUT / HTTP/1.1\r\nTransfer-Encoding: GZIP\r\nTransfer-Encoding: ,chunked ',
    );
    expect(te.framing).toEqual({ kind: 'chunked' });
    expect(te.transferEncoding).toBe('gzip, chunked');
  });

  const refused: [string, string][] = [
    ['no version (HTTP/0.9)', 'GET http://x/'],
    ['an unknown version', 'GET http://x/ HTTP/2.0'],
    ['two spaces in the request line', 'GET  http://x/ HTTP/1.1'],
    ['a control character in the target', 'GET http://x/\x01 HTTP/1.1'],
    ['a field without a colon', 'GET http://x/ HTTP/1.1\r\nBad Header'],
    ['whitespace before the colon', 'GET http://x/ HTTP/1.1\r\nHost : x'],
    ['an obs-fold line', 'GET http://x/ HTTP/1.1\r\nX-A: 1\r\n  continued'],
    ['a bare LF inside a value', 'GET http://x/ HTTP/1.1\r\nX-A: 1\n2'],
    [
      'conflicting Content-Length',
      'POST http://x/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2',
    ],
    ['a negative Content-Length', 'POST http://x/ HTTP/1.1\r\nContent-Length: -1'],
    [
      'both Transfer-Encoding and Content-Length',
      'POST http://x/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3',
    ],
    [
      'a Transfer-Encoding not ending in chunked',
      'POST http://x/ HTTP/1.1\r\nTransfer-Encoding: gzip',
    ],
    ['Transfer-Encoding in HTTP/1.0', 'POST http://x/ HTTP/1.0\r\nTransfer-Encoding: chunked'],
  ];
  for (const [name, text] of refused) {
    it(`refuses ${name}`, () => {
      expect(() => parseRequestHead(text)).toThrow(HeadError);
    });
  }
});

describe('response heads', () => {
  it('reads status, reason and framing; no body for HEAD, 1xx, 204 and 304', () => {
    const r = parseResponseHead('HTTP/1.1 200 OK\r\nContent-Length: 12', 'GET');
    expect([r.status, r.reason, r.framing]).toEqual([200, 'OK', { kind: 'length', length: 12 }]);
    expect(parseResponseHead('HTTP/1.1 200 OK\r\nContent-Length: 12', 'HEAD').framing).toEqual({
      kind: 'none',
    });
    expect(parseResponseHead('HTTP/1.1 204 No Content', 'GET').framing).toEqual({ kind: 'none' });
    expect(parseResponseHead('HTTP/1.1 304 Not Modified', 'GET').framing).toEqual({
      kind: 'none',
    });
    expect(parseResponseHead('HTTP/1.1 103 Early Hints', 'GET').framing).toEqual({ kind: 'none' });
    expect(parseResponseHead('HTTP/1.1 200', 'GET').reason).toBe('');
  });

  it('ends a body without length at close, and never keeps that connection', () => {
    const r = parseResponseHead('HTTP/1.1 200 OK', 'GET');
    expect(r.framing).toEqual({ kind: 'close' });
    expect(r.keepAlive).toBe(false);
  });

  it('refuses an answer with both Transfer-Encoding and Content-Length (RFC 9112 §6.3: an error, not passed on)', () => {
    expect(() =>
      parseResponseHead(
        'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked',
        'GET',
      ),
    ).toThrow(HeadError);
  });

  it('refuses a malformed status line', () => {
    expect(() => parseResponseHead('HTTP/1.1 2000 OK', 'GET')).toThrow(HeadError);
    expect(() => parseResponseHead('ICY 200 OK', 'GET')).toThrow(HeadError);
  });
});

describe('hop-by-hop fields', () => {
  it('drops the standard ones and those the Connection field names', () => {
    const h = parseRequestHead(
      'GET http://x/ HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-Secret\r\nKeep-Alive: 5\r\n' +
        'Proxy-Authorization: Basic Zm9vOmJhcg==\r\nX-Secret: 1\r\nTE: trailers\r\nAccept: */*',
    );
    expect(endToEndFields(h, new Set(['host']))).toBe('Accept: */*\r\n');
  });
});

describe('absolute URIs', () => {
  it('splits host, port, origin-form path and the log target', () => {
    expect(parseHttpTarget('http://Example.TEST:8080/a/b?token=s3cr3t#frag')).toEqual({
      host: 'example.test',
      port: 8080,
      authority: 'example.test:8080',
      path: '/a/b?token=s3cr3t',
      logTarget: 'http://example.test:8080/a/b',
    });
    expect(parseHttpTarget('HTTP://127.0.0.1')).toMatchObject({ port: 80, path: '/' });
    expect(parseHttpTarget('http://127.0.0.1:80?q')).toMatchObject({
      authority: '127.0.0.1',
      path: '/?q',
    });
    expect(parseHttpTarget('http://[::1]:81/')).toMatchObject({
      host: '::1',
      authority: '[::1]:81',
    });
    expect(parseHttpTarget('http://user:pw@host.test/')).toMatchObject({
      host: 'host.test',
      authority: 'host.test',
    });
  });

  it('refuses what is not an http URL', () => {
    expect(parseHttpTarget('ftp://127.0.0.1/x')).toBe('not-http');
    expect(parseHttpTarget('https://127.0.0.1/x')).toBe('not-http');
    for (const t of [
      'http://[zz/',
      'http://',
      'http:/x',
      'x',
      'http://a:0/',
      'http://a:65536/',
      'http://a b/',
    ]) {
      expect(parseHttpTarget(t), t).toBe('not-a-url');
    }
  });
});

describe('chunked bodies', () => {
  const body = Buffer.from(
    '4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT',
  );
  const end = body.length - 4;

  it('finds the end and the payload, whole or a byte at a time', () => {
    const whole = new ChunkedScanner();
    let data = '';
    expect(
      whole.scan(body, 0, body.length, (b: Buffer, s: number, e: number) => {
        data += b.toString('latin1', s, e);
      }),
    ).toBe(end);
    expect(whole.done).toBe(true);
    expect(data).toBe('Wikipedia in\r\n\r\nchunks.');
    const bytewise = new ChunkedScanner();
    let at = 0;
    while (!bytewise.done) at = bytewise.scan(body, at, at + 1);
    expect(at).toBe(end);
  });

  it('refuses a malformed size, data longer than its size, and a missing CRLF', () => {
    for (const bad of ['x\r\n', '2\r\nabc\r\n', '2\r\nab\n', '1\n']) {
      expect(() => new ChunkedScanner().scan(Buffer.from(bad), 0, bad.length), bad).toThrow(
        HeadError,
      );
    }
  });
});

describe('head ends', () => {
  it('finds CRLF CRLF, also when an earlier search stopped inside it', () => {
    const b = Buffer.from('GET / HTTP/1.1\r\nA: b\r\n\r\nrest');
    expect(new HeadReader(1000).find(b)).toEqual({ start: 0, end: b.length - 4 });
    const r = new HeadReader(1000);
    expect(r.find(b.subarray(0, 22))).toBeUndefined();
    expect(r.find(b)).toEqual({ start: 0, end: b.length - 4 });
    expect(new HeadReader(1000).find(Buffer.from('GET / HTTP/1.1\r\n'))).toBeUndefined();
  });

  it('skips empty lines before a head, counted in its size, and refuses a bare CR or LF at once', () => {
    const b = Buffer.from('\r\n\r\nGET / HTTP/1.1\r\n\r\n');
    expect(new HeadReader(1000).find(b)).toEqual({ start: 4, end: b.length });
    expect(() => new HeadReader(16).find(b)).toThrow(HeadError); // 14 bytes of head, 4 before it
    expect(new HeadReader(16).find(b.subarray(4))).toEqual({ start: 0, end: 18 });
    for (const bad of ['\nGET / HTTP/1.1\r\n', 'GET / HTTP/1.1\nHost: x', 'GET / HTTP/1.1\rX']) {
      expect(() => new HeadReader(1000).find(Buffer.from(bad)), JSON.stringify(bad)).toThrow(
        HeadError,
      );
    }
  });
});
