import { type Content, describe, toBytes } from './bytes.js';
import { NoCloudError } from './errors.js';

/** Bytes in one ISO 9660 logical sector (and logical block). */
export const SECTOR_BYTES = 2048;

/**
 * The largest volume {@link buildISO} writes: 64 MiB. The writer is meant
 * for small volumes held whole in memory; over this it throws
 * `NOCLOUD_TOO_LARGE`.
 */
export const MAX_ISO_BYTES = 64 * 1024 * 1024;

/** The longest file name {@link buildISO} accepts (what a Joliet name holds). */
export const MAX_ISO_NAME_LENGTH = 64;

/** The longest volume label {@link buildISO} accepts (Joliet holds 16 UCS-2 units). */
export const MAX_ISO_LABEL_LENGTH = 16;

/** One file of the root directory. */
export interface IsoFile {
  /**
   * The name readers show through Rock Ridge and Joliet: 1 to 64 of
   * `A-Z a-z 0-9 . _ -`, not starting with `.` or `-`. Case is kept.
   */
  readonly name: string;
  /** The file's content; a string is written as UTF-8. */
  readonly data: Content;
}

/** What {@link buildISO} writes. */
export interface BuildIsoOptions {
  /**
   * The volume label (the primary volume identifier, and the Joliet one):
   * 1 to 16 of `A-Z a-z 0-9 _ -`.
   */
  readonly label: string;
  /** The files of the root directory, in any order; names must differ. */
  readonly files: readonly IsoFile[];
  /**
   * The time recorded for the volume and every file. Defaults to
   * 1970-01-01T00:00:00Z so the same input always gives the same bytes.
   * Must fall in 1900..2155 (what a directory record can hold).
   */
  readonly date?: Date;
  /**
   * The smallest volume to write, in bytes (rounded up to whole sectors);
   * the space after the last file is zeros. Defaults to 0: no padding.
   */
  readonly minimumBytes?: number;
}

const LABEL_RE = /^[A-Za-z0-9_-]+$/;
const NAME_RE = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

// Fixed layout, in sectors. 0-15 are the system area (zeros).
const PVD_AT = 16;
const JOLIET_SVD_AT = 17;
const TERMINATOR_AT = 18;
const PATH_L_AT = 19;
const PATH_M_AT = 20;
const JOLIET_PATH_L_AT = 21;
const JOLIET_PATH_M_AT = 22;
const CONTINUATION_AT = 23;
const ROOT_AT = 24;

const FILE_MODE = 0o100444; // regular file, read-only for all
const DIR_MODE = 0o040555; // directory, read and search for all

const RR_ID = 'RRIP_1991A';
const RR_DESCRIPTOR =
  'THE ROCK RIDGE INTERCHANGE PROTOCOL PROVIDES SUPPORT FOR POSIX FILE SYSTEM SEMANTICS';
const RR_SOURCE =
  'PLEASE CONTACT DISC PUBLISHER FOR SPECIFICATION SOURCE.  SEE PUBLISHER IDENTIFIER IN PRIMARY VOLUME DESCRIPTOR FOR CONTACT INFORMATION.';
const APPLICATION_ID = 'PROXY-OP NOCLOUD';

interface Entry {
  readonly name: string;
  readonly data: Uint8Array;
  readonly isoId: string;
  extent: number;
}

/**
 * Writes an ISO 9660 volume held whole in memory: a primary volume
 * descriptor with `label`, a Joliet supplementary descriptor (UCS-2
 * level 3), one root directory with Rock Ridge (RRIP 1.10) entries in the
 * primary tree and long names in the Joliet tree, both trees sharing the
 * file extents, and the four path tables. No subdirectories, no boot
 * record, and no padding beyond the last sector unless `minimumBytes` asks
 * for it.
 *
 * The output depends only on the options: files are sorted by name and
 * every timestamp is `date`. Throws {@link NoCloudError} for a bad label
 * (`NOCLOUD_INVALID_LABEL`), a bad or repeated name (`NOCLOUD_INVALID_NAME`)
 * or a volume over {@link MAX_ISO_BYTES} (`NOCLOUD_TOO_LARGE`).
 *
 * @example
 * ```ts
 * const iso = buildISO({ label: 'cidata', files: [{ name: 'meta-data', data: '{}' }] });
 * iso.byteLength % 2048; // 0
 * ```
 */
export function buildISO(options: BuildIsoOptions): Uint8Array {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`buildISO: options must be an object, got ${describe(options)}`);
  }
  const { label, files } = options;
  if (typeof label !== 'string') {
    throw new TypeError(`buildISO: label must be a string, got ${describe(label)}`);
  }
  if (!Array.isArray(files)) {
    throw new TypeError(`buildISO: files must be an array, got ${describe(files)}`);
  }
  const date = checkDate(options.date, 'buildISO: date');
  checkLabel(label, 'label');
  const minimumBytes = options.minimumBytes ?? 0;
  if (!Number.isInteger(minimumBytes) || minimumBytes < 0 || minimumBytes > MAX_ISO_BYTES) {
    throw new TypeError(
      `buildISO: minimumBytes must be a whole number from 0 to ${MAX_ISO_BYTES}, got ${describe(minimumBytes)}`,
    );
  }

  const entries = prepareEntries(files);

  // Directory records do not depend on extents for their length, so the
  // layout can be fixed before anything is written.
  const rootSectors = sectorsFor(primaryRecords(entries, 0, 0, date));
  const jolietAt = ROOT_AT + rootSectors;
  const jolietSectors = sectorsFor(jolietRecords(entries, 0, 0, date));
  let next = jolietAt + jolietSectors;
  let total = next * SECTOR_BYTES;
  for (const e of entries) {
    total += roundUp(e.data.byteLength);
    if (total > MAX_ISO_BYTES) {
      throw new NoCloudError(
        'NOCLOUD_TOO_LARGE',
        'files',
        `buildISO: the volume would exceed ${MAX_ISO_BYTES} bytes (${MAX_ISO_BYTES / 1048576} MiB); ` +
          'make the files smaller',
      );
    }
    // An empty file takes no sector; it points at where its data would be.
    e.extent = next;
    next += Math.ceil(e.data.byteLength / SECTOR_BYTES);
  }
  const sectors = Math.max(next, Math.ceil(minimumBytes / SECTOR_BYTES));
  const out = new Uint8Array(sectors * SECTOR_BYTES);

  const rootBytes = rootSectors * SECTOR_BYTES;
  const jolietBytes = jolietSectors * SECTOR_BYTES;
  writeDescriptor(out, PVD_AT, {
    type: 1,
    label,
    sectors,
    pathL: PATH_L_AT,
    pathM: PATH_M_AT,
    root: dirRecord(ROOT_AT, rootBytes, true, Uint8Array.of(0), new Uint8Array(0), date),
    date,
  });
  writeDescriptor(out, JOLIET_SVD_AT, {
    type: 2,
    label,
    sectors,
    pathL: JOLIET_PATH_L_AT,
    pathM: JOLIET_PATH_M_AT,
    root: dirRecord(jolietAt, jolietBytes, true, Uint8Array.of(0), new Uint8Array(0), date),
    date,
  });
  const term = TERMINATOR_AT * SECTOR_BYTES;
  out[term] = 255;
  writeAscii(out, term + 1, 'CD001');
  out[term + 6] = 1;

  writePathTable(out, PATH_L_AT, ROOT_AT, true);
  writePathTable(out, PATH_M_AT, ROOT_AT, false);
  writePathTable(out, JOLIET_PATH_L_AT, jolietAt, true);
  writePathTable(out, JOLIET_PATH_M_AT, jolietAt, false);

  out.set(extensionsReference(), CONTINUATION_AT * SECTOR_BYTES);

  packDirectory(out, ROOT_AT, primaryRecords(entries, ROOT_AT, rootBytes, date));
  packDirectory(out, jolietAt, jolietRecords(entries, jolietAt, jolietBytes, date));

  for (const e of entries) out.set(e.data, e.extent * SECTOR_BYTES);
  return out;
}

/** Throws NOCLOUD_INVALID_LABEL unless `label` is one the writer can hold. */
function checkLabel(label: string, field: string): void {
  if (label.length === 0 || label.length > MAX_ISO_LABEL_LENGTH || !LABEL_RE.test(label)) {
    throw new NoCloudError(
      'NOCLOUD_INVALID_LABEL',
      field,
      `${field}: ${JSON.stringify(label)} is not a volume label this writer accepts; ` +
        `use 1 to ${MAX_ISO_LABEL_LENGTH} of A-Z a-z 0-9 _ -`,
    );
  }
}

function checkDate(value: unknown, where: string): Date {
  if (value === undefined) return new Date(0);
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new TypeError(`${where} must be a valid Date, got ${describe(value)}`);
  }
  const year = value.getUTCFullYear();
  if (year < 1900 || year > 2155) {
    throw new TypeError(`${where} must fall in the years 1900 to 2155, got ${year}`);
  }
  return value;
}

function prepareEntries(files: readonly IsoFile[]): Entry[] {
  const seen = new Set<string>();
  const list: { name: string; data: Uint8Array }[] = [];
  files.forEach((file, i) => {
    const where = `files[${i}]`;
    if (typeof file !== 'object' || file === null) {
      throw new TypeError(`buildISO: ${where} must be an object, got ${describe(file)}`);
    }
    const { name } = file;
    if (typeof name !== 'string') {
      throw new TypeError(`buildISO: ${where}.name must be a string, got ${describe(name)}`);
    }
    const data = toBytes(file.data, `buildISO: ${where}.data`);
    if (name.length === 0 || name.length > MAX_ISO_NAME_LENGTH || !NAME_RE.test(name)) {
      throw new NoCloudError(
        'NOCLOUD_INVALID_NAME',
        `${where}.name`,
        `buildISO: ${where}.name ${JSON.stringify(name)} is not a file name this writer accepts; ` +
          `use 1 to ${MAX_ISO_NAME_LENGTH} of A-Z a-z 0-9 . _ -, not starting with . or -`,
      );
    }
    if (seen.has(name)) {
      throw new NoCloudError(
        'NOCLOUD_INVALID_NAME',
        `${where}.name`,
        `buildISO: ${where}.name ${JSON.stringify(name)} is given twice; file names must differ`,
      );
    }
    seen.add(name);
    list.push({ name, data });
  });
  list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const taken = new Set<string>();
  return list.map(({ name, data }) => {
    const isoId = primaryIdentifier(name, taken);
    taken.add(isoId);
    return { name, data, isoId, extent: 0 };
  });
}

/**
 * The level 1 (8.3) identifier of the primary tree for `name`: upper case,
 * other characters as `_`, and a number in place of the name's tail when
 * two names would map to the same identifier.
 */
function primaryIdentifier(name: string, taken: ReadonlySet<string>): string {
  const dot = name.lastIndexOf('.');
  const rawBase = dot === -1 ? name : name.slice(0, dot);
  const rawExt = dot === -1 ? '' : name.slice(dot + 1);
  const clean = (s: string) => s.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
  const base = clean(rawBase).slice(0, 8) || '_';
  const ext = clean(rawExt).slice(0, 3);
  let id = `${base}.${ext};1`;
  for (let n = 1; taken.has(id); n++) {
    const suffix = String(n);
    id = `${base.slice(0, 8 - suffix.length)}${suffix}.${ext};1`;
  }
  return id;
}

function primaryRecords(entries: readonly Entry[], at: number, size: number, date: Date) {
  const records: Uint8Array[] = [];
  const dirTimes = tf(date);
  const dirPx = px(DIR_MODE, 2);
  records.push(
    dirRecord(
      at,
      size,
      true,
      Uint8Array.of(0),
      join([sp(), rr(0x81), dirPx, dirTimes, ce(CONTINUATION_AT, 0, extensionsReference().length)]),
      date,
    ),
  );
  records.push(
    dirRecord(at, size, true, Uint8Array.of(1), join([rr(0x81), dirPx, dirTimes]), date),
  );
  const sorted = [...entries].sort((a, b) => (a.isoId < b.isoId ? -1 : a.isoId > b.isoId ? 1 : 0));
  for (const e of sorted) {
    records.push(
      dirRecord(
        e.extent,
        e.data.byteLength,
        false,
        ascii(e.isoId),
        join([rr(0x89), px(FILE_MODE, 1), tf(date), nm(e.name)]),
        date,
      ),
    );
  }
  return records;
}

function jolietRecords(entries: readonly Entry[], at: number, size: number, date: Date) {
  const none = new Uint8Array(0);
  const records = [
    dirRecord(at, size, true, Uint8Array.of(0), none, date),
    dirRecord(at, size, true, Uint8Array.of(1), none, date),
  ];
  // Names are ASCII, so sorting the strings sorts their UCS-2 code units.
  // Like genisoimage and xorriso, Joliet names carry no `;1` version.
  for (const e of entries) {
    records.push(dirRecord(e.extent, e.data.byteLength, false, ucs2(e.name), none, date));
  }
  return records;
}

/** An ISO 9660 directory record (ECMA-119 9.1). */
function dirRecord(
  extent: number,
  size: number,
  isDir: boolean,
  id: Uint8Array,
  systemUse: Uint8Array,
  date: Date,
): Uint8Array {
  const pad = id.length % 2 === 0 ? 1 : 0;
  const length = 33 + id.length + pad + systemUse.length;
  if (length > 255) throw new Error(`internal: directory record of ${length} bytes`);
  const r = new Uint8Array(length);
  r[0] = length;
  both32(r, 2, extent);
  both32(r, 10, size);
  r.set(shortDate(date), 18);
  r[25] = isDir ? 2 : 0;
  both16(r, 28, 1);
  r[32] = id.length;
  r.set(id, 33);
  r.set(systemUse, 33 + id.length + pad);
  return r;
}

function sectorsFor(records: readonly Uint8Array[]): number {
  let sectors = 1;
  let used = 0;
  for (const r of records) {
    if (used + r.length > SECTOR_BYTES) {
      sectors++;
      used = 0;
    }
    used += r.length;
  }
  return sectors;
}

/** Writes records from sector `at` on; a record never crosses a sector end. */
function packDirectory(out: Uint8Array, at: number, records: readonly Uint8Array[]): void {
  let sector = at;
  let used = 0;
  for (const r of records) {
    if (used + r.length > SECTOR_BYTES) {
      sector++;
      used = 0;
    }
    out.set(r, sector * SECTOR_BYTES + used);
    used += r.length;
  }
}

interface Descriptor {
  type: 1 | 2;
  label: string;
  sectors: number;
  pathL: number;
  pathM: number;
  root: Uint8Array;
  date: Date;
}

/** A primary (type 1) or Joliet supplementary (type 2) volume descriptor. */
function writeDescriptor(out: Uint8Array, sector: number, d: Descriptor): void {
  const at = sector * SECTOR_BYTES;
  const v = out.subarray(at, at + SECTOR_BYTES);
  const joliet = d.type === 2;
  const text = (offset: number, length: number, value: string) =>
    joliet ? writeUcs2Field(v, offset, length, value) : writeAsciiField(v, offset, length, value);
  v[0] = d.type;
  writeAscii(v, 1, 'CD001');
  v[6] = 1;
  text(8, 32, ''); // system identifier
  text(40, 32, d.label); // volume identifier
  both32(v, 80, d.sectors);
  if (joliet) v.set([0x25, 0x2f, 0x45], 88); // escape sequence: UCS-2 level 3
  both16(v, 120, 1); // volume set size
  both16(v, 124, 1); // volume sequence number
  both16(v, 128, SECTOR_BYTES);
  both32(v, 132, 10); // path table size: the root's entry only
  le32(v, 140, d.pathL);
  be32(v, 148, d.pathM);
  v.set(d.root, 156);
  text(190, 128, ''); // volume set
  text(318, 128, ''); // publisher
  text(446, 128, ''); // data preparer
  text(574, 128, APPLICATION_ID);
  text(702, 37, ''); // copyright file
  text(739, 37, ''); // abstract file
  text(776, 37, ''); // bibliographic file
  const long = longDate(d.date);
  v.set(long, 813); // creation
  v.set(long, 830); // modification
  v.set(unsetLongDate(), 847); // expiration
  v.set(unsetLongDate(), 864); // effective
  v[881] = 1; // file structure version
}

/** A path table with the root directory only (ECMA-119 9.4). */
function writePathTable(out: Uint8Array, sector: number, rootAt: number, little: boolean): void {
  const at = sector * SECTOR_BYTES;
  out[at] = 1; // identifier length
  out[at + 1] = 0;
  if (little) {
    le32(out, at + 2, rootAt);
    out[at + 6] = 1; // parent directory number, 16-bit LE
  } else {
    be32(out, at + 2, rootAt);
    out[at + 7] = 1; // parent directory number, 16-bit BE
  }
  out[at + 8] = 0; // root identifier; byte 9 pads to even
}

// System Use Sharing Protocol and Rock Ridge entries.

function suEntry(sig: string, body: readonly number[] | Uint8Array): Uint8Array {
  const e = new Uint8Array(4 + body.length);
  e[0] = sig.charCodeAt(0);
  e[1] = sig.charCodeAt(1);
  e[2] = e.length;
  e[3] = 1;
  e.set(body, 4);
  return e;
}

/** SP: SUSP is in use, no bytes skipped. */
function sp(): Uint8Array {
  return suEntry('SP', [0xbe, 0xef, 0]);
}

/** RR: which Rock Ridge entries the record holds (RRIP 1.09 readers look for it). */
function rr(flags: number): Uint8Array {
  return suEntry('RR', [flags]);
}

/** CE: the rest of the system use area is at this block, offset and length. */
function ce(block: number, offset: number, length: number): Uint8Array {
  const b = new Uint8Array(24);
  both32(b, 0, block);
  both32(b, 8, offset);
  both32(b, 16, length);
  return suEntry('CE', b);
}

/** PX: POSIX mode, links, uid 0, gid 0 (the 36-byte RRIP 1.10 form). */
function px(mode: number, links: number): Uint8Array {
  const b = new Uint8Array(32);
  both32(b, 0, mode);
  both32(b, 8, links);
  return suEntry('PX', b);
}

/** TF: modification, access and attribute-change times. */
function tf(date: Date): Uint8Array {
  const d = shortDate(date);
  return suEntry('TF', join([Uint8Array.of(0x0e), d, d, d]));
}

/** NM: the name as readers show it. */
function nm(name: string): Uint8Array {
  return suEntry('NM', join([Uint8Array.of(0), ascii(name)]));
}

/** ER: the Rock Ridge extension is in use (in the continuation area). */
function extensionsReference(): Uint8Array {
  const id = ascii(RR_ID);
  const des = ascii(RR_DESCRIPTOR);
  const src = ascii(RR_SOURCE);
  return suEntry('ER', join([Uint8Array.of(id.length, des.length, src.length, 1), id, des, src]));
}

// Numbers, strings and dates.

function roundUp(n: number): number {
  return Math.ceil(n / SECTOR_BYTES) * SECTOR_BYTES;
}

function le32(b: Uint8Array, at: number, n: number): void {
  b[at] = n & 0xff;
  b[at + 1] = (n >>> 8) & 0xff;
  b[at + 2] = (n >>> 16) & 0xff;
  b[at + 3] = (n >>> 24) & 0xff;
}

function be32(b: Uint8Array, at: number, n: number): void {
  b[at] = (n >>> 24) & 0xff;
  b[at + 1] = (n >>> 16) & 0xff;
  b[at + 2] = (n >>> 8) & 0xff;
  b[at + 3] = n & 0xff;
}

function both32(b: Uint8Array, at: number, n: number): void {
  le32(b, at, n);
  be32(b, at + 4, n);
}

function both16(b: Uint8Array, at: number, n: number): void {
  b[at] = n & 0xff;
  b[at + 1] = (n >>> 8) & 0xff;
  b[at + 2] = (n >>> 8) & 0xff;
  b[at + 3] = n & 0xff;
}

function ascii(s: string): Uint8Array {
  const b = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
  return b;
}

function ucs2(s: string): Uint8Array {
  const b = new Uint8Array(s.length * 2);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    b[2 * i] = c >>> 8;
    b[2 * i + 1] = c & 0xff;
  }
  return b;
}

function writeAscii(b: Uint8Array, at: number, s: string): void {
  b.set(ascii(s), at);
}

function writeAsciiField(b: Uint8Array, at: number, length: number, s: string): void {
  b.fill(0x20, at, at + length);
  writeAscii(b, at, s.slice(0, length));
}

function writeUcs2Field(b: Uint8Array, at: number, length: number, s: string): void {
  for (let i = 0; i + 1 < length; i += 2) {
    b[at + i] = 0;
    b[at + i + 1] = 0x20;
  }
  b.set(ucs2(s.slice(0, Math.floor(length / 2))), at);
}

function join(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The 7-byte date of a directory record, in UTC. */
function shortDate(d: Date): Uint8Array {
  return Uint8Array.of(
    d.getUTCFullYear() - 1900,
    d.getUTCMonth() + 1,
    d.getUTCDate(),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
    0,
  );
}

/** The 17-byte date of a volume descriptor, in UTC. */
function longDate(d: Date): Uint8Array {
  const p = (n: number, w: number) => String(n).padStart(w, '0');
  const s =
    p(d.getUTCFullYear(), 4) +
    p(d.getUTCMonth() + 1, 2) +
    p(d.getUTCDate(), 2) +
    p(d.getUTCHours(), 2) +
    p(d.getUTCMinutes(), 2) +
    p(d.getUTCSeconds(), 2) +
    p(Math.floor(d.getUTCMilliseconds() / 10), 2);
  return join([ascii(s), Uint8Array.of(0)]);
}

function unsetLongDate(): Uint8Array {
  return join([ascii('0'.repeat(16)), Uint8Array.of(0)]);
}
