// Peer: llhttp (the WebAssembly build undici ships, strict) as a differential oracle, on byte
// strings; no sockets. Every request stream and origin answer below is read by the proxy's own
// reader and by llhttp: what the proxy accepts, llhttp reads the same way (method, target,
// version, fields, body bytes, message end, keep-alive); what llhttp refuses, the proxy
// refuses; and each refusal of the proxy's that llhttp does not share is one the README lists.
import { describe, expect, it } from 'vitest';
import {
  type Comparison,
  compareRequests,
  compareResponse,
  documentedRefusals,
  ourRequests,
} from './differential.js';
import { llhttpParse } from './llhttp.js';

const documented = documentedRefusals();
const O = 'http://127.0.0.1:8080';

/** What a case must show: both read it alike, both refuse it, or the proxy alone refuses it. */
type Expect = 'same' | 'refused' | `extra:${string}`;

function check(c: Comparison, expected: Expect, llRefused: boolean): void {
  expect(c.problems).toEqual([]);
  if (expected === 'same') {
    expect(c.extraRefusal).toBeUndefined();
    expect(llRefused).toBe(false);
  } else if (expected === 'refused') {
    expect(c.extraRefusal).toBeUndefined();
    expect(llRefused).toBe(true);
  } else {
    expect(c.extraRefusal).toBe(expected.slice(6));
    expect(documented.has(expected.slice(6)), `${expected} is in the README`).toBe(true);
  }
}

const ch = (body: string, extra = '') =>
  `POST ${O}/c HTTP/1.1\r\nHost: a\r\n${extra}Transfer-Encoding: chunked\r\n\r\n${body}`;
const cl = (v: string, body = 'a') => `POST ${O}/p HTTP/1.1\r\nContent-Length: ${v}\r\n\r\n${body}`;
const te = (v: string) => `POST ${O}/p HTTP/1.1\r\nTransfer-Encoding: ${v}\r\n\r\n0\r\n\r\n`;

const requests: [string, string, Expect][] = [
  ['a plain GET', `GET ${O}/ HTTP/1.1\r\nHost: a\r\n\r\n`, 'same'],
  ['empty lines before the request line', `\r\n\r\nGET ${O}/ HTTP/1.1\r\n\r\n`, 'same'],
  ['a bare LF before the request line', `\nGET ${O}/ HTTP/1.1\r\n\r\n`, 'extra:empty-line-bare'],
  ['a bare CR before the request line', `\rGET ${O}/ HTTP/1.1\r\n\r\n`, 'extra:empty-line-bare'],
  ['pipelined requests', `GET ${O}/1 HTTP/1.1\r\n\r\nGET ${O}/2 HTTP/1.1\r\n\r\n`, 'same'],
  ['a body, then the next request', `${cl('3', 'abc')}GET ${O}/2 HTTP/1.1\r\n\r\n`, 'same'],
  ['every registered method llhttp knows', `QUERY ${O}/ HTTP/1.1\r\n\r\n`, 'same'],
  ['an unknown method', `FOO ${O}/ HTTP/1.1\r\n\r\n`, 'refused'],
  ['a lowercase method', `get ${O}/ HTTP/1.1\r\n\r\n`, 'refused'],
  [
    'HTTP/1.0 keep-alive, then a second request',
    `GET ${O}/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET ${O}/ HTTP/1.0\r\n\r\n`,
    'same',
  ],
  [
    '`keep-alive` with a tab after it keeps nothing',
    `GET ${O}/ HTTP/1.0\r\nConnection: keep-alive\t\r\n\r\n`,
    'same',
  ],
  [
    'Connection: close, then more bytes',
    `GET ${O}/ HTTP/1.1\r\nConnection: close\r\n\r\nGET ${O}/ HTTP/1.1\r\n\r\n`,
    'same',
  ],
  ['HTTP/2.0 in a request line', `GET ${O}/ HTTP/2.0\r\n\r\n`, 'extra:version'],
  ['an HTTP/0.9 request line', `GET ${O}/\r\n\r\n`, 'extra:version'],
  ['HTTP/1.2', `GET ${O}/ HTTP/1.2\r\n\r\n`, 'refused'],
  ['a LF inside the target, a field after it', `GET ${O}/a\nb HTTP/1.1\r\n\r\n`, 'refused'],
  [
    'a LF inside the target (an HTTP/0.9 line and a field to llhttp)',
    `GET ${O}/\nX:1/ HTTP/1.1\r\n\r\n`,
    'extra:target',
  ],
  ['a bare LF in a head not yet complete', `GET ${O}/\nX:1 HTTP/1.1\r\n`, 'extra:bare-lf'],
  ['two spaces after the method', `GET  ${O}/ HTTP/1.1\r\n\r\n`, 'extra:request-line-spaces'],
  ['a space at the end of the request line', `GET ${O}/ HTTP/1.1 \r\n\r\n`, 'refused'],
  ['a tab for a space', `GET\t${O}/ HTTP/1.1\r\n\r\n`, 'refused'],
  ['a byte above 0x7E in the target', `GET ${O}/\xff HTTP/1.1\r\n\r\n`, 'refused'],
  ['a bare LF ending the request line', `GET ${O}/ HTTP/1.1\nHost: a\r\n\r\n`, 'refused'],
  ['a bare LF ending a field line', `GET ${O}/ HTTP/1.1\r\nHost: a\n\r\n`, 'refused'],
  ['a bare CR inside a field line', `GET ${O}/ HTTP/1.1\r\nX: a\rb\r\n\r\n`, 'refused'],
  ['an obs-fold line', `GET ${O}/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n`, 'refused'],
  ['whitespace before a colon', `GET ${O}/ HTTP/1.1\r\nX : a\r\n\r\n`, 'refused'],
  ['whitespace before the first field', `GET ${O}/ HTTP/1.1\r\n X: a\r\n\r\n`, 'refused'],
  ['a NUL in a value', `GET ${O}/ HTTP/1.1\r\nX: a\0b\r\n\r\n`, 'refused'],
  ['DEL in a value', `GET ${O}/ HTTP/1.1\r\nX: a\x7fb\r\n\r\n`, 'refused'],
  ['obs-text in a value', `GET ${O}/ HTTP/1.1\r\nX: a\xffb\r\n\r\n`, 'same'],
  ['an empty field name', `GET ${O}/ HTTP/1.1\r\n: a\r\n\r\n`, 'refused'],
  ['a repeated Host', `GET ${O}/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n`, 'extra:host-repeated'],
  ['Content-Length with leading zeros', cl('01'), 'same'],
  ['Content-Length with a space after it', cl('1 '), 'same'],
  ['Content-Length with a tab after it', cl('1\t'), 'refused'],
  ['Content-Length +1', cl('+1'), 'refused'],
  ['Content-Length -1', cl('-1'), 'refused'],
  ['Content-Length 1 1', cl('1 1'), 'refused'],
  ['an empty Content-Length', cl(''), 'refused'],
  ['Content-Length: 1, 1', cl('1, 1'), 'refused'],
  [
    'two equal Content-Length lines',
    `POST ${O}/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\na`,
    'refused',
  ],
  ['Content-Length past 2^64', cl('99999999999999999999'), 'refused'],
  ['Content-Length past 2^53', cl('9007199254740993'), 'extra:content-length-size'],
  [
    'CL.TE: both framing fields',
    `POST ${O}/ HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    'refused',
  ],
  [
    'TE.CL: both framing fields',
    `POST ${O}/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n`,
    'refused',
  ],
  ['Transfer-Encoding: gzip, chunked', te('gzip, chunked'), 'same'],
  [
    'Transfer-Encoding on two lines',
    `POST ${O}/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    'same',
  ],
  [
    'TE.TE: chunked, then another line',
    `POST ${O}/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n`,
    'refused',
  ],
  ['TE.TE: chunked twice', te('chunked, chunked'), 'refused'],
  ['TE.TE: xchunked', te('xchunked'), 'refused'],
  ['TE.TE: chunked with a tab after', te('chunked\t'), 'refused'],
  ['TE.TE: chunked with a space after', te('chunked '), 'same'],
  ['TE.TE: chunked;x=1', te('chunked;x=1'), 'refused'],
  ['TE.TE: CHUNKED', te('CHUNKED'), 'same'],
  ['TE.TE: chunked,', te('chunked,'), 'refused'],
  ['TE.TE: , chunked', te(', chunked'), 'same'],
  ['TE.TE: identity', te('identity'), 'refused'],
  ['TE.TE: gzip chunked (no comma)', te('gzip chunked'), 'refused'],
  [
    'an empty Transfer-Encoding',
    `POST ${O}/ HTTP/1.1\r\nTransfer-Encoding: \r\n\r\n`,
    'extra:te-empty',
  ],
  [
    'chunked in HTTP/1.0',
    `POST ${O}/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    'extra:te-http10',
  ],
  [
    'a chunked body with extensions and trailers',
    ch('1;a=b;c="d e"\r\na\r\n0\r\nX: y\r\n\r\n'),
    'same',
  ],
  ['an extension with an empty value', ch('1;a=\r\na\r\n0\r\n\r\n'), 'same'],
  ['an extension with no name', ch('1;=b\r\na\r\n0\r\n\r\n'), 'extra:chunk-ext'],
  ['an extension with a space after ;', ch('1; a=b\r\na\r\n0\r\n\r\n'), 'refused'],
  ['a space after a chunk size', ch('1 \r\na\r\n0\r\n\r\n'), 'refused'],
  ['a space before an extension', ch('1 ;a\r\na\r\n0\r\n\r\n'), 'refused'],
  ['a LF in an extension', ch('1;a\nb\r\na\r\n0\r\n\r\n'), 'refused'],
  ['a control in a quoted extension', ch('1;a="\x01"\r\na\r\n0\r\n\r\n'), 'refused'],
  ['a quoted-pair with a tab', ch('1;a="\\\t"\r\na\r\n0\r\n\r\n'), 'same'],
  ['chunk sizes with leading zeros', ch('00000000000000001\r\na\r\n000\r\n\r\n'), 'same'],
  ['a chunk size past 2^64', ch('10000000000000001\r\na\r\n0\r\n\r\n'), 'refused'],
  ['a chunk size past 2^53', ch('20000000000001\r\n'), 'extra:chunk-size-large'],
  ['a chunk size 0x1', ch('0x1\r\na\r\n0\r\n\r\n'), 'refused'],
  ['a chunk size -1', ch('-1\r\na\r\n0\r\n\r\n'), 'refused'],
  ['a bare LF after a chunk size', ch('1\na\r\n0\r\n\r\n'), 'refused'],
  ['chunk data longer than its size', ch('1\r\nab\r\n0\r\n\r\n'), 'refused'],
  ['chunk data ending in a bare LF', ch('1\r\na\n0\r\n\r\n'), 'refused'],
  ['a malformed trailer line', ch('0\r\nX y\r\n\r\n'), 'refused'],
  ['a trailer ending in a bare LF', ch('0\r\nX: y\nZ: w\r\n\r\n'), 'refused'],
  ['an obs-fold trailer', ch('0\r\nX: y\r\n z\r\n\r\n'), 'refused'],
  ['Content-Length in the trailers', ch('0\r\nContent-Length: 5\r\n\r\n'), 'refused'],
  ['Transfer-Encoding in the trailers', ch('0\r\nTransfer-Encoding: chunked\r\n\r\n'), 'refused'],
  [
    'Connection: close in the trailers',
    ch('0\r\nConnection: close\r\n\r\n'),
    'extra:trailer-framing',
  ],
  [
    'a chunked GET',
    `GET ${O}/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n`,
    'same',
  ],
  ['a HEAD with a body', `HEAD ${O}/ HTTP/1.1\r\nContent-Length: 1\r\n\r\na`, 'same'],
  [
    'Expect: 100-continue',
    `POST ${O}/ HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\na`,
    'same',
  ],
  [
    'an Expect other than 100-continue',
    `POST ${O}/ HTTP/1.1\r\nExpect: later\r\nContent-Length: 1\r\n\r\na`,
    'extra:expectation',
  ],
  [
    'an Upgrade request, then more bytes',
    `GET ${O}/ HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: ws\r\n\r\nGET ${O}/ HTTP/1.1\r\n\r\n`,
    'same',
  ],
  [
    'an Upgrade request with a body',
    `POST ${O}/ HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: ws\r\nContent-Length: 2\r\n\r\nab`,
    'same',
  ],
  ['a CONNECT and its tunnel bytes', 'CONNECT a:1 HTTP/1.1\r\n\r\n\x16\x03\x01', 'same'],
  ['a CONNECT without a port', 'CONNECT a HTTP/1.1\r\n\r\n', 'extra:connect-target'],
  ['an origin-form target', 'GET /x HTTP/1.1\r\n\r\n', 'extra:origin-form'],
  ['an https URI', 'GET https://a/ HTTP/1.1\r\n\r\n', 'extra:not-http'],
  ['an authority with a backslash', 'GET http://a\\b/ HTTP/1.1\r\n\r\n', 'refused'],
  [
    'an authority llhttp takes but no host has',
    'GET http://a!b/ HTTP/1.1\r\n\r\n',
    'extra:not-a-url',
  ],
  ['a fragment right after the authority', 'GET http://a#x HTTP/1.1\r\n\r\n', 'refused'],
  // Found by the fuzzer: a userinfo llhttp refuses must not be stripped to leave a host behind.
  ['a userinfo with a quote', 'GET http://12".0.0.1:@080/1 HTTP/1.1\r\n\r\n', 'refused'],
  ['a userinfo with a backslash', 'GET http://127.0.0.1\\:@080/0 HTTP/1.1\r\n\r\n', 'refused'],
  ['a userinfo with an @', 'GET http://a@b@c/ HTTP/1.1\r\n\r\n', 'extra:not-a-url'],
  [
    'an empty Transfer-Encoding and a Content-Length',
    `PUT ${O}/ HTTP/1.1\r\nTransfer-Encoding: \r\nContent-Length: 0\r\n\r\n`,
    'extra:te-empty',
  ],
];

describe('requests: llhttp reads what the proxy accepts the same way, and the proxy refuses what llhttp refuses', () => {
  for (const [name, text, expected] of requests) {
    it(name, () => {
      const input = Buffer.from(text, 'latin1');
      const ll = llhttpParse('request', input);
      check(compareRequests(input), expected, ll.error !== undefined && ll.messages.length === 0);
    });
  }

  it('more fields or a larger head than the limits allow are refused (431), llhttp has no limit', () => {
    const fields = Array.from({ length: 101 }, (_, i) => `X-${i}: v\r\n`).join('');
    const many = Buffer.from(`GET ${O}/ HTTP/1.1\r\n${fields}\r\n`, 'latin1');
    check(compareRequests(many), 'extra:field-count', false);
    const big = Buffer.from(`GET ${O}/ HTTP/1.1\r\nX: ${'a'.repeat(17_000)}\r\n\r\n`, 'latin1');
    check(compareRequests(big), 'extra:head-size', false);
    const longExt = Buffer.from(ch(`1;a=${'b'.repeat(5000)}\r\na\r\n0\r\n\r\n`), 'latin1');
    check(compareRequests(longExt), 'extra:chunk-line-size', false);
    const longTrailer = Buffer.from(ch(`0\r\nX: ${'b'.repeat(5000)}\r\n\r\n`), 'latin1');
    check(compareRequests(longTrailer), 'extra:trailer-size', false);
  });

  it('reads a stream split anywhere the same way as whole', () => {
    const text = `${cl('3', 'abc')}${ch('2;x=1\r\nhi\r\n0\r\nT: 1\r\n\r\n')}GET ${O}/3 HTTP/1.1\r\n\r\n`;
    const whole = ourRequests(Buffer.from(text, 'latin1'));
    expect(whole.messages.map((m) => m.body.toString())).toEqual(['abc', 'hi', '']);
  });
});

const responses: [string, string, string, Expect][] = [
  ['a length-delimited answer', 'GET', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok', 'same'],
  ['no reason phrase', 'GET', 'HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok', 'same'],
  ['an answer delimited by close', 'GET', 'HTTP/1.1 200 OK\r\n\r\nabc', 'same'],
  [
    'a chunked answer with trailers',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX: y\r\n\r\n',
    'same',
  ],
  ['HEAD: a length and no body', 'HEAD', 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n', 'same'],
  [
    'HEAD: chunked and no body',
    'HEAD',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n',
    'same',
  ],
  [
    '204 with a Content-Length',
    'GET',
    'HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n',
    'same',
  ],
  [
    '304 with a Content-Length',
    'GET',
    'HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\n\r\n',
    'same',
  ],
  [
    '100 Continue, then the answer',
    'GET',
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na',
    'same',
  ],
  [
    '103 Early Hints, then the answer',
    'GET',
    'HTTP/1.1 103 EH\r\nLink: x\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na',
    'same',
  ],
  [
    'HTTP/1.0 keep-alive',
    'GET',
    'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\na',
    'same',
  ],
  [
    'a Transfer-Encoding not ending in chunked: read until close',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc',
    'same',
  ],
  [
    'chunked, then gzip: read until close',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nabc',
    'same',
  ],
  [
    'both Transfer-Encoding and Content-Length',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n',
    'refused',
  ],
  [
    'two equal Content-Length lines',
    'GET',
    'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc',
    'refused',
  ],
  ['a body cut short', 'GET', 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nab', 'refused'],
  [
    'a chunked body cut short',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab',
    'refused',
  ],
  [
    'a 1xx with a Content-Length (llhttp reads a body)',
    'GET',
    'HTTP/1.1 150 X\r\nContent-Length: 1\r\n\r\naHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb',
    'extra:interim-framing',
  ],
  [
    'a 1xx that closes the connection',
    'GET',
    'HTTP/1.0 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na',
    'extra:interim-close',
  ],
  [
    '101 Switching Protocols',
    'GET',
    'HTTP/1.1 101 Switching\r\nUpgrade: ws\r\n\r\nxyz',
    'extra:switching-protocols',
  ],
  [
    'chunked twice',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n',
    'extra:te-chunked-twice',
  ],
  [
    'chunked with a tab after it (llhttp reads until close)',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\t\r\n\r\n0\r\n\r\n',
    'extra:te-not-chunked',
  ],
  [
    'chunked in HTTP/1.0',
    'GET',
    'HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'extra:te-http10',
  ],
  // Found by the fuzzer: llhttp reads chunked with a parameter, or with more after it in the same
  // element, as no chunked at all, a strict reader as chunked. Neither reading is passed on.
  [
    'chunked with a parameter',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;a=b\r\n\r\n0\r\n\r\n',
    'extra:te-not-chunked',
  ],
  [
    'chunked, a parameter, chunked again',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: , chunked;a="c d" chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    'extra:te-not-chunked',
  ],
  [
    'chunked ;chunked',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked ;chunked\r\n\r\n0\r\n\r\n',
    'extra:te-not-chunked',
  ],
  [
    'a parameter on a coding before chunked',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip;q=1, chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n',
    'same',
  ],
  [
    'an empty Transfer-Encoding',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\nabc',
    'extra:te-empty',
  ],
  [
    'HTTP/2.0 in a status line',
    'GET',
    'HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n',
    'extra:status-line',
  ],
  ['a status below 100', 'GET', 'HTTP/1.1 099 X\r\n\r\n', 'extra:status-code'],
  [
    'a control in the reason phrase',
    'GET',
    'HTTP/1.1 200 O\x01K\r\nContent-Length: 0\r\n\r\n',
    'extra:reason-phrase',
  ],
  ['a four-digit status', 'GET', 'HTTP/1.1 1000 X\r\n\r\n', 'refused'],
  ['a bare LF ending a field line', 'GET', 'HTTP/1.1 200 OK\r\nContent-Length: 0\n\r\n', 'refused'],
  [
    'Connection: close in the trailers',
    'GET',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nConnection: close\r\n\r\n',
    'extra:trailer-framing',
  ],
];

describe('origin answers: the same, for what the proxy reads from origins', () => {
  for (const [name, method, text, expected] of responses) {
    it(name, () => {
      const input = Buffer.from(text, 'latin1');
      const ll = llhttpParse('response', input, { methods: [method], eof: true });
      const final = ll.messages.find((m) => m.status >= 200);
      check(
        compareResponse(input, method),
        expected,
        final === undefined && ll.upgradeAt === undefined,
      );
    });
  }
});

describe('origin answers still arriving', () => {
  it('a bare CR ending a status line is refused as soon as it arrives (llhttp takes it)', () => {
    const input = Buffer.from('HTTP/1.1 200 OK\r\rX-A', 'latin1');
    check(compareResponse(input, 'GET', false), 'extra:bare-cr', false);
  });
});

describe("the README's table of refusals beyond llhttp", () => {
  it('names only rules the proxy has, each shown by a case above', () => {
    const shown = new Set(
      [...requests.map((r) => r[2]), ...responses.map((r) => r[3])]
        .filter((e) => e.startsWith('extra:'))
        .map((e) => e.slice(6)),
    );
    // Shown by the cases of their own above: the limits, and the answer still arriving.
    for (const rule of ['field-count', 'head-size', 'chunk-line-size', 'trailer-size', 'bare-cr']) {
      shown.add(rule);
    }
    // The fuzzer shows these: a LF where llhttp reads an HTTP/0.9 request line.
    for (const rule of ['bare-lf', 'request-line']) shown.add(rule);
    expect([...documented].filter((r) => !shown.has(r))).toEqual([]);
  });
});
