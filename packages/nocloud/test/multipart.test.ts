// Peer: none (the multipart builder in process; cloud-init's own parser is in cloudinit.test.ts).
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  buildMultipart,
  detectContentType,
  isMimeMessage,
  MULTIPART_BOUNDARY,
} from '../src/index.js';
import { Random } from './support/random.js';

const dec = new TextDecoder();

describe('detectContentType', () => {
  it.each([
    ['#!/bin/sh\n', 'text/x-shellscript'],
    ['  \n\t#!/usr/bin/env python3', 'text/x-shellscript'],
    ['#cloud-config\n', 'text/cloud-config'],
    ['#Cloud-Config\n', 'text/cloud-config'],
    ['#cloud-config-archive\n', 'text/cloud-config-archive'],
    ['#cloud-config-jsonp\n', 'text/cloud-config-jsonp'],
    ['#cloud-boothook\n', 'text/cloud-boothook'],
    ['#include\nhttp://x\n', 'text/x-include-url'],
    ['#include-once\nhttp://x\n', 'text/x-include-once-url'],
    ['#part-handler\n', 'text/part-handler'],
    ['## template: jinja\n#cloud-config\n', 'text/jinja2'],
    ['plain words', 'text/plain'],
    ['', 'text/plain'],
  ])('%j is %s', (content, type) => {
    expect(detectContentType(content)).toBe(type);
  });

  it('knows gzip and opaque bytes', () => {
    expect(detectContentType(gzipSync('#cloud-config\n'))).toBe('application/gzip');
    expect(detectContentType(new Uint8Array([0xff, 0x00, 0x80]))).toBe('application/octet-stream');
    expect(detectContentType(new Uint8Array([0x23, 0x21, 0xff]))).toBe('text/x-shellscript');
  });
});

describe('isMimeMessage', () => {
  it('looks for MIME-Version in the first 4096 bytes, in any case', () => {
    expect(isMimeMessage('Content-Type: text/plain\nmime-version: 1.0\n\nx')).toBe(true);
    expect(isMimeMessage(`${'x'.repeat(4090)}MIME-Version: 1.0`)).toBe(false);
    expect(isMimeMessage('#cloud-config\n')).toBe(false);
  });
});

describe('buildMultipart', () => {
  it('writes CRLF headers, a typed part per input and a closing delimiter', () => {
    const text = dec.decode(
      buildMultipart([
        { content: '#!/bin/sh\necho a\n', filename: 'a.sh' },
        { content: '#cloud-config\n', contentType: 'text/cloud-config' },
      ]),
    );
    const b = MULTIPART_BOUNDARY;
    expect(text).toBe(
      [
        `Content-Type: multipart/mixed; boundary="${b}"`,
        'MIME-Version: 1.0',
        '',
        `--${b}`,
        'Content-Type: text/x-shellscript; charset="utf-8"',
        'MIME-Version: 1.0',
        'Content-Transfer-Encoding: 7bit',
        'Content-Disposition: attachment; filename="a.sh"',
        '',
        '#!/bin/sh\necho a\n',
        `--${b}`,
        'Content-Type: text/cloud-config; charset="utf-8"',
        'MIME-Version: 1.0',
        'Content-Transfer-Encoding: 7bit',
        '',
        '#cloud-config\n',
        `--${b}--`,
        '',
      ].join('\r\n'),
    );
  });

  it('writes anything not ASCII as base64 lines of 76', () => {
    const content = new Uint8Array(200).fill(0xe9);
    const text = dec.decode(buildMultipart([{ content }]));
    expect(text).toContain('Content-Type: application/octet-stream\r\n');
    expect(text).toContain('Content-Transfer-Encoding: base64\r\n');
    const body = text.split('\r\n\r\n')[2]!.split(`\r\n--${MULTIPART_BOUNDARY}--`)[0]!;
    expect(body.split('\r\n').every((l) => l.length <= 76)).toBe(true);
    expect(Buffer.from(body.replace(/\r\n/g, ''), 'base64').equals(content)).toBe(true);
  });

  it('writes ASCII with control characters other than tab and line ends as base64', () => {
    for (const content of ['a\u0000b', 'bell\u0007', 'esc\u001b[0m', 'del\u007f']) {
      expect(dec.decode(buildMultipart([{ content }])), JSON.stringify(content)).toContain(
        'Content-Transfer-Encoding: base64',
      );
    }
    expect(dec.decode(buildMultipart([{ content: 'tab\there\r\n' }]))).toContain(
      'Content-Transfer-Encoding: 7bit',
    );
  });

  it('picks a boundary that no part contains (property, 200 seeded cases)', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const r = new Random(seed);
      const parts = Array.from({ length: r.int(1, 4) }, () => {
        let s = '#!/bin/sh\n';
        for (let k = r.int(0, 4); k > 0; k--) {
          s += `--${MULTIPART_BOUNDARY}${r.pick(['', '-1', '-2', '-3', '--', '-'])}${r.pick(['\r\n', '\n', ' ', ''])}`;
        }
        return { content: s };
      });
      const text = dec.decode(buildMultipart(parts));
      const boundary = /boundary="([^"]+)"/.exec(text)?.[1] ?? '';
      for (const p of parts)
        expect(p.content.includes(`--${boundary}`), `seed ${seed}`).toBe(false);
      // The delimiter lines are exactly one per part plus the closing one.
      const lines = text.split('\r\n').filter((l) => l.startsWith(`--${boundary}`));
      expect(lines.length, `seed ${seed}`).toBeGreaterThanOrEqual(parts.length + 1);
    }
  });

  it('nests a part that is a MIME message as it is', () => {
    const inner =
      'Content-Type: multipart/mixed; boundary="x"\nMIME-Version: 1.0\n\n--x\n\nhi\n--x--\n';
    const text = dec.decode(buildMultipart([{ content: inner, contentType: 'text/plain' }]));
    expect(text).toContain(`--${MULTIPART_BOUNDARY}\r\n${inner}\r\n--${MULTIPART_BOUNDARY}--`);
  });

  it('gives the same bytes for the same parts', () => {
    const parts = [{ content: '#!/bin/sh\n' }, { content: new Uint8Array([1, 2, 3]) }];
    expect(Buffer.from(buildMultipart(parts)).equals(buildMultipart(parts))).toBe(true);
  });

  it('throws TypeError for arguments of the wrong type', () => {
    const misuse: unknown[] = [
      'x',
      [null],
      [{ content: 1 }],
      [{ content: 'x', contentType: 'text' }],
      [{ content: 'x', contentType: 'text/plain\r\nX-Evil: 1' }],
      [{ content: 'x', filename: 'a"b' }],
      [{ content: 'x', filename: '' }],
    ];
    for (const arg of misuse) {
      expect(() => buildMultipart(arg as never), JSON.stringify(arg)).toThrow(TypeError);
    }
  });
});
