// Peer: none (pure codecs, in-process).
import { describe, expect, it } from 'vitest';
import {
  array,
  bool,
  decode,
  encode,
  fixedOpaque,
  hyper,
  int,
  opaque,
  optional,
  string,
  struct,
  uhyper,
  uhyperNumber,
  uint,
  XdrError,
} from '../src/xdr.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

describe('XDR primitives', () => {
  it('writes int and unsigned int big-endian in four bytes', () => {
    expect(encode(int, -2)).toEqual(hex('fffffffe'));
    expect(encode(uint, 0xdeadbeef)).toEqual(hex('deadbeef'));
    expect(decode(int, hex('80000000'))).toBe(-0x8000_0000);
    expect(decode(uint, hex('deadbeef'))).toBe(0xdeadbeef);
  });

  it('writes hyper and unsigned hyper in eight bytes', () => {
    expect(encode(hyper, -1n)).toEqual(hex('ffffffff ffffffff'));
    expect(encode(uhyper, 9_000_000n)).toEqual(hex('00000000 00895440'));
    expect(decode(uhyperNumber, hex('00000000 00895440'))).toBe(9_000_000);
    expect(decode(hyper, hex('ffffffff ffffffff'))).toBe(-1n);
    expect(decode(hyper, hex('80000000 00000000'))).toBe(-(2n ** 63n));
    expect(decode(uhyper, hex('ffffffff fffffffe'))).toBe(2n ** 64n - 2n);
  });

  it('refuses an unsigned hyper above the safe integer range as a number', () => {
    expect(() => decode(uhyperNumber, hex('00200000 00000000'))).toThrow(XdrError);
  });

  it('writes bool as 0 or 1 and refuses any other value', () => {
    expect(encode(bool, true)).toEqual(hex('00000001'));
    expect(() => decode(bool, hex('00000002'))).toThrow(XdrError);
  });

  it('pads strings and opaque data to four bytes with zeros', () => {
    expect(encode(string(), 'test')).toEqual(
      hex(
        '00000004' + // length 4
          '74657374', // "test", no padding needed
      ),
    );
    expect(encode(string(), 'vm')).toEqual(
      hex(
        '00000002' + // length 2
          '766d' + // "vm"
          '0000', // two bytes of padding
      ),
    );
    expect(encode(opaque(), new Uint8Array([1, 2, 3, 4, 5]))).toEqual(
      hex(
        '00000005' + // length 5
          '0102030405' + // the bytes
          '000000', // three bytes of padding
      ),
    );
  });

  it('rejects non-zero padding', () => {
    expect(() => decode(string(), hex('00000002 766d 0001'))).toThrow(/padding/);
  });

  it('rejects leftover bytes after a value', () => {
    expect(() => decode(int, hex('00000001 00000000'))).toThrow(/leftover/);
  });

  it('decodes a range of a larger buffer, and stops at its end', () => {
    const s = struct('pair', { a: int, b: uhyper }, ['a', 'b']);
    const v = { a: -2, b: 0xffff_ffff_ffff_fff0n };
    const inner = encode(s, v);
    const outer = Buffer.concat([Buffer.from([9, 9, 9]), inner, Buffer.from([7, 7, 7, 7])]);
    expect(decode(s, outer, 3, 3 + inner.length)).toEqual(v);
    // The bytes after `end` are not there for the reader: too short, or leftover.
    expect(() => decode(s, outer, 3, 3 + inner.length - 4)).toThrow(XdrError);
    expect(() => decode(int, outer, 3, 3 + inner.length)).toThrow(/leftover/);
  });

  it('rejects a value cut short', () => {
    expect(() => decode(string(), hex('00000008 74657374'))).toThrow(XdrError);
  });

  it('enforces declared maximum lengths on both sides', () => {
    expect(() => encode(string(3), 'test')).toThrow(XdrError);
    expect(() => decode(string(3), hex('00000004 74657374'))).toThrow(/exceeds/);
    expect(() => decode(array(int, 1), hex('00000002 00000001 00000002'))).toThrow(/exceeds/);
  });

  it('refuses invalid UTF-8 in strings', () => {
    expect(() => decode(string(), hex('00000001 ff000000'))).toThrow(/UTF-8/);
  });

  it('checks values before writing them', () => {
    expect(int.valid(2 ** 31)).toBe(false);
    expect(uint.valid(-1)).toBe(false);
    expect(uint.valid(1.5)).toBe(false);
    expect(fixedOpaque(16).valid(new Uint8Array(15))).toBe(false);
    expect(() => encode(uint, -1)).toThrow(XdrError);
  });
});

describe('XDR combinators', () => {
  const point = struct<{ x: number; label: string | undefined }>(
    'point',
    { x: int, label: optional(string()) },
    ['x', 'label'],
  );

  it('writes optional data as a flag then the value', () => {
    expect(encode(point, { x: 7, label: undefined })).toEqual(
      hex(
        '00000007' + // x = 7
          '00000000', // label absent
      ),
    );
    expect(encode(point, { x: 7, label: 'a' })).toEqual(
      hex(
        '00000007' + // x = 7
          '00000001' + // label present
          '00000001 61000000', // "a" with padding
      ),
    );
  });

  it('round-trips arrays of structs', () => {
    const codec = array(point, 10);
    const value = [
      { x: 1, label: 'one' },
      { x: -2, label: undefined },
    ];
    expect(decode(codec, encode(codec, value))).toEqual(value);
  });

  it('rejects an optional flag other than 0 or 1', () => {
    expect(() => decode(point, hex('00000007 00000002'))).toThrow(/optional flag/);
  });

  it('rejects an array longer than the bytes left', () => {
    expect(() => decode(array(int), hex('7fffffff'))).toThrow(XdrError);
  });

  it('says which struct field is invalid', () => {
    expect(point.valid({ x: 1, label: 3 })).toBe(false);
    expect(() => encode(point, { x: 1.5, label: undefined })).toThrow(/int/);
  });
});
