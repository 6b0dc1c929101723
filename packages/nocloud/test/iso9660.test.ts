// Peer: none (the writer in process, read back by the strict reader in test/support).
import { describe, expect, it } from 'vitest';
import { buildISO, type IsoFile, MAX_ISO_BYTES, NoCloudError, SECTOR_BYTES } from '../src/index.js';
import { writerCases } from './support/cases.js';
import { readISO } from './support/iso-reader.js';
import { Random } from './support/random.js';

const enc = new TextEncoder();

function expectRoundTrip(iso: Uint8Array, files: readonly IsoFile[]) {
  const vol = readISO(iso);
  expect([...vol.rockRidge.keys()].sort()).toEqual(files.map((f) => f.name).sort());
  expect([...vol.joliet.keys()].sort()).toEqual(files.map((f) => f.name).sort());
  for (const f of files) {
    const want = typeof f.data === 'string' ? enc.encode(f.data) : f.data;
    expect(Buffer.from(vol.rockRidge.get(f.name)!.data).equals(want), f.name).toBe(true);
    expect(Buffer.from(vol.joliet.get(f.name)!).equals(want), f.name).toBe(true);
  }
  return vol;
}

describe('buildISO layout', () => {
  const files: IsoFile[] = [
    { name: 'user-data', data: '#cloud-config\n' },
    { name: 'meta-data', data: 'instance-id: a\n' },
  ];

  it('writes the label, Joliet, Rock Ridge and the files', () => {
    const vol = expectRoundTrip(buildISO({ label: 'cidata', files }), files);
    expect(vol.label).toBe('cidata');
    expect(vol.jolietLabel).toBe('cidata');
    expect(vol.extensions).toEqual(['RRIP_1991A']);
    expect(vol.rockRidge.get('user-data')?.isoId).toBe('USER_DAT.;1');
    expect(vol.rockRidge.get('user-data')?.mode).toBe(0o100444);
    expect(vol.applicationId).toBe('PROXY-OP NOCLOUD');
  });

  it('is compact: 24 metadata sectors and one per small file', () => {
    const iso = buildISO({ label: 'cidata', files });
    expect(iso.byteLength).toBe((26 + 2) * SECTOR_BYTES);
  });

  it('gives a file of exactly one sector one sector, and one byte more two', () => {
    const one = buildISO({ label: 'x', files: [{ name: 'f', data: new Uint8Array(2048) }] });
    const two = buildISO({ label: 'x', files: [{ name: 'f', data: new Uint8Array(2049) }] });
    const none = buildISO({ label: 'x', files: [{ name: 'f', data: '' }] });
    expect(one.byteLength - none.byteLength).toBe(SECTOR_BYTES);
    expect(two.byteLength - none.byteLength).toBe(2 * SECTOR_BYTES);
  });

  it('holds a volume with no files', () => {
    const vol = readISO(buildISO({ label: 'cidata', files: [] }));
    expect(vol.rockRidge.size).toBe(0);
  });

  for (const c of writerCases()) {
    it(`reads back: ${c.title}`, () => {
      expectRoundTrip(buildISO({ label: c.label, files: c.files }), c.files);
    });
  }
});

describe('buildISO determinism', () => {
  const files: IsoFile[] = [
    { name: 'b', data: 'two' },
    { name: 'a', data: 'one' },
  ];

  it('gives the same bytes for the same input, whatever the order of files', () => {
    const first = buildISO({ label: 'cidata', files });
    const again = buildISO({ label: 'cidata', files: [...files].reverse() });
    expect(Buffer.from(first).equals(again)).toBe(true);
  });

  it('records 1970-01-01 by default and an injected date when given', () => {
    expect(readISO(buildISO({ label: 'cidata', files })).created).toBe('1970010100000000');
    const date = new Date('2026-11-29T12:34:56.780Z');
    const vol = readISO(buildISO({ label: 'cidata', files, date }));
    expect(vol.created).toBe('2026112912345678');
    expect(vol.rootTime).toEqual([2026, 11, 29, 12, 34, 56]);
  });
});

describe('buildISO property', () => {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-';
  it('reads back any valid names and contents (200 seeded cases)', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const r = new Random(seed);
      const names = new Set<string>();
      const count = r.int(0, 12);
      while (names.size < count) {
        names.add(r.pick(['a', 'Z', '0', '_']) + r.string(r.int(0, 63), alphabet));
      }
      const files = [...names].map((name) => ({ name, data: r.bytes(r.size(9000)) }));
      const label = r.string(r.int(1, 16), 'ABCxyz019_-');
      try {
        const iso = buildISO({ label, files });
        expectRoundTrip(iso, files);
        expect(readISO(iso).label).toBe(label);
      } catch (err) {
        throw new Error(`seed ${seed}: ${(err as Error).message}`, { cause: err });
      }
    }
  });
});

describe('buildISO errors', () => {
  function code(fn: () => unknown): string | undefined {
    try {
      fn();
    } catch (err) {
      if (NoCloudError.isInstance(err)) return `${err.code} ${err.field}`;
      throw err;
    }
    return undefined;
  }

  it.each([
    ['', 'empty'],
    ['a'.repeat(17), 'too long for Joliet'],
    ['ci data', 'a space'],
    ['cidätä', 'not ASCII'],
  ])('rejects label %j (%s)', (label) => {
    expect(code(() => buildISO({ label, files: [] }))).toBe('NOCLOUD_INVALID_LABEL label');
  });

  it.each([
    ['', 'empty'],
    ['.hidden', 'leading dot'],
    ['-x', 'leading hyphen'],
    ['a/b', 'a slash'],
    ['a b', 'a space'],
    ['é', 'not ASCII'],
    ['n'.repeat(65), 'over 64 characters'],
  ])('rejects file name %j (%s)', (name) => {
    expect(code(() => buildISO({ label: 'x', files: [{ name, data: '' }] }))).toBe(
      'NOCLOUD_INVALID_NAME files[0].name',
    );
  });

  it('rejects a repeated name', () => {
    const files = [
      { name: 'a', data: '' },
      { name: 'a', data: 'x' },
    ];
    expect(code(() => buildISO({ label: 'x', files }))).toBe('NOCLOUD_INVALID_NAME files[1].name');
  });

  it(`rejects a volume over ${MAX_ISO_BYTES} bytes`, () => {
    const half = new Uint8Array(MAX_ISO_BYTES / 2);
    const files = [
      { name: 'a', data: half },
      { name: 'b', data: half },
    ];
    expect(code(() => buildISO({ label: 'x', files }))).toBe('NOCLOUD_TOO_LARGE files');
  });

  it('throws TypeError for arguments of the wrong type', () => {
    const misuse: unknown[] = [
      undefined,
      { label: 1, files: [] },
      { label: 'x', files: 'a' },
      { label: 'x', files: [null] },
      { label: 'x', files: [{ name: 1, data: '' }] },
      { label: 'x', files: [{ name: 'a', data: 1 }] },
      { label: 'x', files: [], date: 'yesterday' },
      { label: 'x', files: [], date: new Date(Number.NaN) },
      { label: 'x', files: [], date: new Date('1800-01-01T00:00:00Z') },
    ];
    for (const arg of misuse) {
      expect(() => buildISO(arg as never), JSON.stringify(arg)).toThrow(TypeError);
    }
  });
});
