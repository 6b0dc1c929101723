// A strict reader of the volumes buildISO writes, for in-process property
// tests. It checks the structure as it reads (both-endian fields agree,
// records stay inside their sector, every descriptor points where it
// should) and throws on anything off. Real readers are in the *.test.ts
// files named for them; this one only makes many cases cheap.

const SECTOR = 2048;

export interface ReadFile {
  /** The primary (level 1) identifier, e.g. `USER_DAT.;1`. */
  readonly isoId: string;
  readonly extent: number;
  readonly data: Uint8Array;
  readonly mode: number | undefined;
}

export interface ReadVolume {
  readonly label: string;
  readonly jolietLabel: string;
  readonly sectors: number;
  readonly applicationId: string;
  readonly created: string;
  /** Files by Rock Ridge name. */
  readonly rockRidge: Map<string, ReadFile>;
  /** File contents by Joliet name. */
  readonly joliet: Map<string, Uint8Array>;
  /** Identifiers of the Rock Ridge extension found in the root's ER entries. */
  readonly extensions: string[];
  /** The first date of the root's TF entry, as [year, month, day, h, m, s]. */
  readonly rootTime: number[];
}

export function readISO(iso: Uint8Array): ReadVolume {
  assert(iso.length % SECTOR === 0, 'volume is not a whole number of sectors');
  assert(iso.length >= 19 * SECTOR, 'volume too short');
  assert(
    iso.subarray(0, 16 * SECTOR).every((b) => b === 0),
    'system area is not zero',
  );
  const pvd = sector(iso, 16);
  assert(pvd[0] === 1 && text(pvd, 1, 5) === 'CD001' && pvd[6] === 1, 'no primary descriptor');
  const svd = sector(iso, 17);
  assert(svd[0] === 2 && text(svd, 1, 5) === 'CD001', 'no supplementary descriptor at 17');
  assert(svd[88] === 0x25 && svd[89] === 0x2f && svd[90] === 0x45, 'not Joliet level 3');
  const term = sector(iso, 18);
  assert(term[0] === 255 && text(term, 1, 5) === 'CD001', 'no terminator at 18');

  const sectors = both32(pvd, 80);
  assert(sectors * SECTOR === iso.length, `volume size ${sectors} does not match the bytes`);
  assert(both32(svd, 80) === sectors, 'Joliet volume size differs');
  assert(both16(pvd, 128) === SECTOR && both16(svd, 128) === SECTOR, 'block size is not 2048');

  const label = text(pvd, 40, 32).trimEnd();
  const jolietLabel = ucs2(svd.subarray(40, 72)).trimEnd();

  const root = record(pvd, 156);
  const jroot = record(svd, 156);
  checkPathTables(iso, pvd, root.extent);
  checkPathTables(iso, svd, jroot.extent);

  const records = directory(iso, root.extent, root.size);
  const [dot, dotdot, ...files] = records;
  assert(dot?.id.length === 1 && dot.id[0] === 0, 'first record is not "."');
  assert(dotdot?.id.length === 1 && dotdot.id[0] === 1, 'second record is not ".."');
  const dotEntries = susp(dot.systemUse);
  const spEntry = dotEntries[0];
  assert(spEntry?.sig === 'SP' && spEntry.body[0] === 0xbe && spEntry.body[1] === 0xef, 'no SP');
  const extensions: string[] = [];
  const ceEntry = dotEntries.find((e) => e.sig === 'CE');
  if (ceEntry) {
    const at = both32(ceEntry.body, 0) * SECTOR + both32(ceEntry.body, 8);
    const len = both32(ceEntry.body, 16);
    for (const e of susp(iso.subarray(at, at + len))) {
      if (e.sig === 'ER') extensions.push(text(e.body, 4, e.body[0] as number));
    }
  }
  const tfEntry = dotEntries.find((e) => e.sig === 'TF');
  const rootTime = tfEntry ? [...tfEntry.body.subarray(1, 7)] : [];
  rootTime[0] = (rootTime[0] ?? 0) + 1900;

  const rockRidge = new Map<string, ReadFile>();
  let previous = '';
  for (const f of files) {
    const isoId = text(f.id, 0, f.id.length);
    assert(isoId > previous, `primary records out of order at ${isoId}`);
    previous = isoId;
    assert(/^[A-Z0-9_]{1,8}\.[A-Z0-9_]{0,3};1$/.test(isoId), `bad level 1 identifier ${isoId}`);
    const entries = susp(f.systemUse);
    const nm = entries.filter((e) => e.sig === 'NM');
    assert(nm.length === 1, `${isoId}: expected one NM entry`);
    const name = text(nm[0]!.body, 1, nm[0]!.body.length - 1);
    const pxEntry = entries.find((e) => e.sig === 'PX');
    const mode = pxEntry ? both32(pxEntry.body, 0) : undefined;
    assert(!rockRidge.has(name), `name ${name} twice`);
    rockRidge.set(name, { isoId, extent: f.extent, data: content(iso, f), mode });
  }

  const jrecords = directory(iso, jroot.extent, jroot.size);
  const joliet = new Map<string, Uint8Array>();
  let jprevious = '';
  for (const f of jrecords.slice(2)) {
    const name = ucs2(f.id);
    assert(name > jprevious, `Joliet records out of order at ${name}`);
    jprevious = name;
    assert(f.systemUse.length === 0, 'Joliet record with system use bytes');
    joliet.set(name, content(iso, f));
  }
  return {
    label,
    jolietLabel,
    sectors,
    applicationId: text(pvd, 574, 128).trimEnd(),
    created: text(pvd, 813, 16),
    rockRidge,
    joliet,
    extensions,
    rootTime,
  };
}

interface Rec {
  readonly extent: number;
  readonly size: number;
  readonly flags: number;
  readonly id: Uint8Array;
  readonly systemUse: Uint8Array;
}

function record(b: Uint8Array, at: number): Rec {
  const len = b[at] as number;
  assert(len >= 34, `record at ${at} too short`);
  const idLen = b[at + 32] as number;
  const pad = idLen % 2 === 0 ? 1 : 0;
  assert(33 + idLen + pad <= len, `record at ${at}: identifier runs past its end`);
  assert(both16(b, at + 28) === 1, 'volume sequence number is not 1');
  return {
    extent: both32(b, at + 2),
    size: both32(b, at + 10),
    flags: b[at + 25] as number,
    id: b.subarray(at + 33, at + 33 + idLen),
    systemUse: b.subarray(at + 33 + idLen + pad, at + len),
  };
}

function directory(iso: Uint8Array, extent: number, size: number): Rec[] {
  assert(size % SECTOR === 0, 'directory size is not whole sectors');
  const out: Rec[] = [];
  for (let s = 0; s < size / SECTOR; s++) {
    const sec = sector(iso, extent + s);
    let at = 0;
    while (at < SECTOR && sec[at] !== 0) {
      const len = sec[at] as number;
      assert(at + len <= SECTOR, 'record crosses a sector end');
      out.push(record(sec, at));
      at += len;
    }
    assert(
      sec.subarray(at).every((b) => b === 0),
      'bytes after the last record of a sector',
    );
  }
  return out;
}

function content(iso: Uint8Array, r: Rec): Uint8Array {
  assert((r.flags & 2) === 0, 'file record flagged as directory');
  if (r.size === 0) return new Uint8Array(0);
  const at = r.extent * SECTOR;
  assert(at >= 19 * SECTOR && at + r.size <= iso.length, 'file extent outside the volume');
  return iso.subarray(at, at + r.size);
}

function checkPathTables(iso: Uint8Array, vd: Uint8Array, rootExtent: number): void {
  assert(both32(vd, 132) === 10, 'path table size is not 10');
  const l = sector(iso, le32(vd, 140));
  const m = sector(iso, be32(vd, 148));
  assert(l[0] === 1 && le32(l, 2) === rootExtent && l[6] === 1 && l[8] === 0, 'bad L table');
  assert(m[0] === 1 && be32(m, 2) === rootExtent && m[7] === 1 && m[8] === 0, 'bad M table');
}

function susp(area: Uint8Array): { sig: string; body: Uint8Array }[] {
  const out: { sig: string; body: Uint8Array }[] = [];
  let at = 0;
  while (at + 4 <= area.length) {
    const len = area[at + 2] as number;
    assert(len >= 4 && at + len <= area.length, 'bad system use entry length');
    assert(area[at + 3] === 1, 'system use entry version is not 1');
    out.push({ sig: text(area, at, 2), body: area.subarray(at + 4, at + len) });
    at += len;
  }
  return out;
}

function sector(iso: Uint8Array, n: number): Uint8Array {
  assert((n + 1) * SECTOR <= iso.length, `sector ${n} outside the volume`);
  return iso.subarray(n * SECTOR, (n + 1) * SECTOR);
}

function le32(b: Uint8Array, at: number): number {
  return (
    ((b[at] as number) | ((b[at + 1] as number) << 8) | ((b[at + 2] as number) << 16)) +
    (b[at + 3] as number) * 0x1000000
  );
}

function be32(b: Uint8Array, at: number): number {
  return (
    (b[at] as number) * 0x1000000 +
    (((b[at + 1] as number) << 16) | ((b[at + 2] as number) << 8) | (b[at + 3] as number))
  );
}

function both32(b: Uint8Array, at: number): number {
  const v = le32(b, at);
  assert(v === be32(b, at + 4), `both-endian field at ${at} disagrees`);
  return v;
}

function both16(b: Uint8Array, at: number): number {
  const v = (b[at] as number) | ((b[at + 1] as number) << 8);
  assert(v === (((b[at + 2] as number) << 8) | (b[at + 3] as number)), 'both-endian 16 disagrees');
  return v;
}

function text(b: Uint8Array, at: number, len: number): string {
  return String.fromCharCode(...b.subarray(at, at + len));
}

function ucs2(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i + 1 < b.length; i += 2) {
    s += String.fromCharCode(((b[i] as number) << 8) | (b[i + 1] as number));
  }
  return s;
}

function assert(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(`readISO: ${message}`);
}
