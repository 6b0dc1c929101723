// Peer: none (the seed builder in process, read back by the strict reader in test/support).
import { describe, expect, it } from 'vitest';
import {
  buildMetaData,
  buildSeedISO,
  buildVendorData,
  GUEST_AGENT_SCRIPT,
  MAX_SEED_FILE_BYTES,
  NoCloudError,
  SEED_MIN_BYTES,
  type SeedOptions,
  seedFiles,
} from '../src/index.js';
import { buildCases } from './support/cases.js';
import { readISO } from './support/iso-reader.js';
import { Random, utf8Text } from './support/random.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

function failure(fn: () => unknown): { code: string; field: string; message: string } {
  try {
    fn();
  } catch (err) {
    if (NoCloudError.isInstance(err))
      return { code: err.code, field: err.field, message: err.message };
    throw err;
  }
  throw new Error('did not throw');
}

describe('buildSeedISO', () => {
  it('holds user-data, meta-data and vendor-data in a volume labelled cidata', () => {
    const userData = '#cloud-config\npackages: [squid]\n';
    const vol = readISO(buildSeedISO({ instanceId: 'proxy-a', userData }));
    expect(vol.label).toBe('cidata');
    expect([...vol.rockRidge.keys()].sort()).toEqual(['meta-data', 'user-data', 'vendor-data']);
    expect(dec.decode(vol.rockRidge.get('user-data')!.data)).toBe(userData);
    expect(dec.decode(vol.rockRidge.get('meta-data')!.data)).toBe(
      'instance-id: "proxy-a"\nlocal-hostname: "proxy-a"\n',
    );
    expect(dec.decode(vol.rockRidge.get('vendor-data')!.data)).toBe(GUEST_AGENT_SCRIPT);
  });

  it('is tens of KiB for a typical seed', () => {
    const iso = buildSeedISO({
      instanceId: 'proxy-a',
      userData: '#cloud-config\n',
      networkConfig: 'version: 2\n',
    });
    expect(iso.byteLength).toBeLessThanOrEqual(72 * 1024);
    expect(iso.byteLength).toBeGreaterThanOrEqual(SEED_MIN_BYTES);
  });

  it('is padded with zeros to 68 KiB, so busybox findfs sees it; 0 turns that off', () => {
    const opts: SeedOptions = { instanceId: 'proxy-a', userData: '#cloud-config\n' };
    const padded = buildSeedISO(opts);
    const bare = buildSeedISO({ ...opts, minimumBytes: 0 });
    expect(bare.byteLength).toBeLessThan(SEED_MIN_BYTES);
    expect(padded.byteLength).toBe(SEED_MIN_BYTES);
    expect(padded.subarray(bare.byteLength).every((b) => b === 0)).toBe(true);
    // The volume size in the primary descriptor counts the padding (both-endian, offset 80).
    const pvd = Buffer.from(padded.subarray(16 * 2048, 17 * 2048));
    expect(pvd.readUInt32LE(80) * 2048).toBe(padded.byteLength);
    expect(readISO(padded).rockRidge.get('user-data')?.data).toEqual(
      new TextEncoder().encode('#cloud-config\n'),
    );
    expect(() => buildSeedISO({ ...opts, minimumBytes: -1 })).toThrow(TypeError);
  });

  it('is deterministic, and takes an injected date', () => {
    const opts: SeedOptions = { instanceId: 'a', userData: 'x', vendorData: '#!/bin/sh\n' };
    expect(Buffer.from(buildSeedISO(opts)).equals(buildSeedISO({ ...opts }))).toBe(true);
    const dated = buildSeedISO({ ...opts, date: new Date('2030-01-02T03:04:05Z') });
    expect(readISO(dated).created).toBe('2030010203040500');
  });

  it('reads back every table case byte for byte', () => {
    for (const c of buildCases()) {
      const vol = readISO(c.iso);
      expect([...vol.rockRidge.keys()].sort(), c.title).toEqual([...c.files.keys()].sort());
      for (const [name, data] of c.files) {
        expect(Buffer.from(vol.rockRidge.get(name)!.data).equals(data), `${c.title}: ${name}`).toBe(
          true,
        );
      }
    }
  });

  it('passes user-data through byte for byte (200 seeded cases)', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const r = new Random(seed);
      const userData =
        seed % 3 === 0
          ? utf8Text(r, r.size(20_000))
          : r.bytes(r.size(seed % 100 === 0 ? 600_000 : 20_000));
      const files = seedFiles({ instanceId: `i-${seed}`, userData });
      expect(files[0]?.data, `seed ${seed}`).toBe(userData);
      const vol = readISO(buildSeedISO({ instanceId: `i-${seed}`, userData }));
      expect(
        Buffer.from(vol.rockRidge.get('user-data')!.data).equals(userData),
        `seed ${seed}`,
      ).toBe(true);
    }
  });
});

describe('seedFiles', () => {
  it('lists the files in order and leaves out empty vendor-data and network-config', () => {
    const names = (o: SeedOptions) => seedFiles(o).map((f) => f.name);
    expect(names({ instanceId: 'a', userData: '' })).toEqual([
      'user-data',
      'meta-data',
      'vendor-data',
    ]);
    expect(names({ instanceId: 'a', userData: '', installGuestAgent: false })).toEqual([
      'user-data',
      'meta-data',
    ]);
    expect(
      names({
        instanceId: 'a',
        userData: '',
        installGuestAgent: false,
        vendorData: '',
        networkConfig: '',
      }),
    ).toEqual(['user-data', 'meta-data']);
    expect(names({ instanceId: 'a', userData: '', networkConfig: 'version: 2\n' })).toEqual([
      'user-data',
      'meta-data',
      'vendor-data',
      'network-config',
    ]);
  });

  it('keeps a string user-data as UTF-8 and bytes as they are', () => {
    const text = 'ü\r\n';
    expect(seedFiles({ instanceId: 'a', userData: text })[0]?.data).toEqual(enc.encode(text));
  });
});

describe('buildMetaData', () => {
  it('quotes both values and defaults the hostname to the instance id', () => {
    expect(buildMetaData('proxy-a')).toBe('instance-id: "proxy-a"\nlocal-hostname: "proxy-a"\n');
    expect(buildMetaData('123', 'true')).toBe('instance-id: "123"\nlocal-hostname: "true"\n');
    expect(buildMetaData('a_b.c', 'host.example.com')).toContain(
      'local-hostname: "host.example.com"',
    );
  });

  it.each([
    ['', 'empty'],
    ['-a', 'leading hyphen'],
    ['.a', 'leading dot'],
    ['a/b', 'a slash'],
    ['a b', 'a space'],
    ['a:b', 'a colon'],
    ['ä', 'not ASCII'],
    ['a'.repeat(129), 'over 128 characters'],
  ])('rejects instance id %j (%s)', (id) => {
    expect(failure(() => buildMetaData(id, 'host'))).toMatchObject({
      code: 'NOCLOUD_INVALID_NAME',
      field: 'instanceId',
    });
  });

  it.each([
    ['', 'empty'],
    ['-a', 'leading hyphen'],
    ['a-', 'trailing hyphen'],
    ['a_b', 'an underscore'],
    ['a..b', 'an empty label'],
    ['a.', 'a trailing dot'],
    ['x'.repeat(64), 'a label over 63'],
    [`${'a'.repeat(63)}.`.repeat(4).slice(0, 254), 'over 253 characters'],
  ])('rejects hostname %j (%s)', (host) => {
    expect(failure(() => buildMetaData('a', host))).toMatchObject({
      code: 'NOCLOUD_INVALID_NAME',
      field: 'hostname',
    });
  });

  it('says to pass hostname when the instance id is no host name', () => {
    const f = failure(() => buildSeedISO({ instanceId: 'a_b', userData: '' }));
    expect(f).toMatchObject({ code: 'NOCLOUD_INVALID_NAME', field: 'hostname' });
    expect(f.message).toContain('pass hostname');
    expect(() => buildSeedISO({ instanceId: 'a_b', hostname: 'a-b', userData: '' })).not.toThrow();
  });
});

describe('buildVendorData', () => {
  const script = enc.encode(GUEST_AGENT_SCRIPT);

  it('is the script alone, the configured data alone, or nothing', () => {
    expect(buildVendorData()).toEqual(script);
    expect(buildVendorData({ installGuestAgent: false })).toBeUndefined();
    expect(buildVendorData({ installGuestAgent: false, vendorData: '' })).toBeUndefined();
    const configured = enc.encode('#cloud-config\n');
    expect(buildVendorData({ installGuestAgent: false, vendorData: configured })).toBe(configured);
    expect(buildVendorData({ vendorData: '' })).toEqual(script);
  });

  it('joins both as a multipart with the script first', () => {
    const text = dec.decode(buildVendorData({ vendorData: '#cloud-config\nruncmd: [true]\n' }));
    expect(text).toMatch(/^Content-Type: multipart\/mixed; boundary="proxy-op-nocloud-part"\r\n/);
    const script = text.indexOf('Content-Type: text/x-shellscript');
    const config = text.indexOf('Content-Type: text/cloud-config');
    expect(script).toBeGreaterThan(0);
    expect(config).toBeGreaterThan(script);
    expect(text).toContain('filename="guest-agent.sh"');
  });

  it('refuses a MIME message that is not UTF-8', () => {
    const bad = new Uint8Array([...enc.encode('MIME-Version: 1.0\r\n\r\n'), 0xff, 0xfe]);
    expect(failure(() => buildVendorData({ vendorData: bad }))).toMatchObject({
      code: 'NOCLOUD_INVALID_VENDOR_DATA',
      field: 'vendorData',
    });
  });
});

describe('limits and labels', () => {
  const at = new Uint8Array(MAX_SEED_FILE_BYTES);
  const over = new Uint8Array(MAX_SEED_FILE_BYTES + 1);

  it(`takes files of exactly ${MAX_SEED_FILE_BYTES} bytes`, () => {
    expect(() =>
      seedFiles({ instanceId: 'a', userData: at, installGuestAgent: false }),
    ).not.toThrow();
  });

  it.each([
    ['userData', { userData: over }],
    ['vendorData', { userData: '', vendorData: over, installGuestAgent: false }],
    ['networkConfig', { userData: '', networkConfig: over }],
  ])('rejects %s one byte over the limit', (field, extra) => {
    expect(failure(() => seedFiles({ instanceId: 'a', ...extra }))).toMatchObject({
      code: 'NOCLOUD_TOO_LARGE',
      field,
    });
  });

  it('rejects vendor data that fits alone but not joined with the script', () => {
    expect(
      failure(() => seedFiles({ instanceId: 'a', userData: '', vendorData: at })),
    ).toMatchObject({
      code: 'NOCLOUD_TOO_LARGE',
      field: 'vendorData',
    });
  });

  it('takes cidata and CIDATA, and refuses any other label', () => {
    expect(readISO(buildSeedISO({ instanceId: 'a', userData: '', label: 'CIDATA' })).label).toBe(
      'CIDATA',
    );
    for (const label of ['CiData', 'config-2', '', 'cidata ']) {
      const f = failure(() => buildSeedISO({ instanceId: 'a', userData: '', label }));
      expect(f).toMatchObject({ code: 'NOCLOUD_INVALID_LABEL', field: 'label' });
      expect(f.message).toContain('"cidata"');
    }
  });
});

describe('misuse', () => {
  it('throws TypeError for arguments of the wrong type', () => {
    const misuse: unknown[] = [
      undefined,
      'proxy-a',
      { userData: '' },
      { instanceId: 1, userData: '' },
      { instanceId: 'a' },
      { instanceId: 'a', userData: 1 },
      { instanceId: 'a', userData: [1, 2] },
      { instanceId: 'a', userData: '', hostname: 1 },
      { instanceId: 'a', userData: '', vendorData: {} },
      { instanceId: 'a', userData: '', networkConfig: 2 },
      { instanceId: 'a', userData: '', installGuestAgent: 'yes' },
      { instanceId: 'a', userData: '', label: 1 },
      { instanceId: 'a', userData: '', date: '2020-01-01' },
    ];
    for (const arg of misuse) {
      expect(() => buildSeedISO(arg as never), JSON.stringify(arg)).toThrow(TypeError);
    }
  });

  it('brands its errors so isInstance works across copies', () => {
    const err = new NoCloudError('NOCLOUD_TOO_LARGE', 'userData', 'too big');
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('NoCloudError');
    expect(NoCloudError.isInstance(err)).toBe(true);
    expect(NoCloudError.isInstance(new Error('x'))).toBe(false);
    expect(NoCloudError.isInstance({ code: 'NOCLOUD_TOO_LARGE' })).toBe(false);
    expect(NoCloudError.isInstance(null)).toBe(false);
  });
});
