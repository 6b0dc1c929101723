/**
 * IP addresses and CIDR ranges, parsed strictly and compared without
 * allocation: an IPv4 address is one 32-bit number, an IPv6 address four.
 * An IPv6 address that carries an IPv4 address (IPv4-mapped
 * `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`)
 * is judged as both, so a rule for the IPv4 range holds for every
 * spelling of it.
 *
 * @module
 */

/** An IPv4 address: one unsigned 32-bit number. */
export interface Ipv4 {
  /** The address family. */
  readonly family: 4;
  /** The address as an unsigned 32-bit number. */
  readonly value: number;
}

/** An IPv6 address: four unsigned 32-bit words, the most significant first. */
export interface Ipv6 {
  /** The address family. */
  readonly family: 6;
  /** The address as four unsigned 32-bit words, the most significant first. */
  readonly words: readonly [number, number, number, number];
}

/** An IP address of either family. */
export type IpAddress = Ipv4 | Ipv6;

/** A CIDR range: the network (host bits cleared) and its prefix length. */
export type Cidr =
  | { readonly family: 4; readonly value: number; readonly prefix: number }
  | {
      readonly family: 6;
      readonly words: readonly [number, number, number, number];
      readonly prefix: number;
    };

const DOTTED = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const HEX_GROUP = /^[0-9a-f]{1,4}$/i;

/** A dotted-quad IPv4 address (`192.0.2.1`, no leading zeros), or undefined. */
function parseDotted(text: string): number | undefined {
  const m = DOTTED.exec(text);
  if (m === null) return undefined;
  let value = 0;
  for (let i = 1; i <= 4; i++) {
    const part = m[i] as string;
    if (part.length > 1 && part.startsWith('0')) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    value = value * 256 + n;
  }
  return value;
}

/** The eight 16-bit groups of an IPv6 address (no zone, no brackets), or undefined. */
function parseGroups(text: string): number[] | undefined {
  if (text.length < 2 || text.length > 45 || text.includes('%')) return undefined;
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const side = (s: string): number[] | undefined => {
    if (s === '') return [];
    const out: number[] = [];
    const parts = s.split(':');
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i] as string;
      if (i === parts.length - 1 && p.includes('.')) {
        const v4 = parseDotted(p);
        if (v4 === undefined) return undefined;
        out.push(v4 >>> 16, v4 & 0xffff);
      } else if (HEX_GROUP.test(p)) {
        out.push(Number.parseInt(p, 16));
      } else return undefined;
    }
    return out;
  };
  const head = side(halves[0] as string);
  if (head === undefined) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const tail = side(halves[1] as string);
  if (tail === undefined) return undefined;
  // A dotted tail belongs at the end only.
  if ((halves[0] as string).includes('.')) return undefined;
  if (head.length + tail.length > 7) return undefined;
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

function wordsOf(groups: readonly number[]): [number, number, number, number] {
  const g = (i: number) => groups[i] as number;
  return [
    (g(0) * 0x10000 + g(1)) >>> 0,
    (g(2) * 0x10000 + g(3)) >>> 0,
    (g(4) * 0x10000 + g(5)) >>> 0,
    (g(6) * 0x10000 + g(7)) >>> 0,
  ];
}

/**
 * A literal IP address in its standard spelling: a dotted quad without
 * leading zeros, or IPv6 text (an embedded IPv4 tail allowed, no zone),
 * with or without brackets. Undefined for anything else.
 */
export function parseIp(text: string): IpAddress | undefined {
  const t = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (!t.includes(':')) {
    const value = parseDotted(t);
    return value === undefined ? undefined : { family: 4, value };
  }
  const groups = parseGroups(t);
  return groups === undefined ? undefined : { family: 6, words: wordsOf(groups) };
}

const INET_PART = /^(?:0x[0-9a-f]*|0[0-7]*|[1-9]\d*)$/i;

/**
 * An IPv4 address in any spelling the C library's `inet_aton` reads, the
 * one a host name goes through before DNS: one to four parts, each
 * decimal, octal (a leading `0`) or hexadecimal (`0x`), the last filling
 * the bytes left (`127.1`, `0x7f.1`, `2852039166`, `0251.0376.0251.0376`).
 * Undefined when `text` is no such address.
 */
export function parseInetAton(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length > 4) return undefined;
  const nums: number[] = [];
  for (const p of parts) {
    if (!INET_PART.test(p)) return undefined;
    const lower = p.toLowerCase();
    const n = lower.startsWith('0x')
      ? lower.length === 2
        ? 0
        : Number.parseInt(lower.slice(2), 16)
      : lower.length > 1 && lower.startsWith('0')
        ? Number.parseInt(lower, 8)
        : Number(lower);
    if (!Number.isSafeInteger(n)) return undefined;
    nums.push(n);
  }
  const last = nums.length - 1;
  let value = 0;
  for (let i = 0; i < last; i++) {
    const n = nums[i] as number;
    if (n > 255) return undefined;
    value = value * 256 + n;
  }
  const restBits = 8 * (4 - last);
  const tail = nums[last] as number;
  if (tail >= 2 ** restBits) return undefined;
  return value * 2 ** restBits + tail;
}

/** The address as text: a dotted quad, or IPv6 in its shortest form (RFC 5952). */
export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) return formatV4(ip.value);
  const groups: number[] = [];
  for (const w of ip.words) groups.push(w >>> 16, w & 0xffff);
  // The longest run of two or more zero groups becomes `::` (the first such run on a tie).
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number) =>
    groups
      .slice(from, to)
      .map((g) => g.toString(16))
      .join(':');
  if (best < 0) return hex(0, 8);
  return `${hex(0, best)}::${hex(best + bestLen, 8)}`;
}

function formatV4(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`;
}

/** The mask of the top `bits` bits of a 32-bit word (0 to 32). */
function mask(bits: number): number {
  if (bits <= 0) return 0;
  if (bits >= 32) return 0xffffffff;
  return (0xffffffff << (32 - bits)) >>> 0;
}

/**
 * A CIDR (`10.0.0.0/8`, `fd00::/8`) or a bare address (a range of one),
 * with host bits cleared (`10.0.0.1/8` is `10.0.0.0/8`). Undefined for
 * anything else, a prefix out of range included.
 */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const addressText = slash < 0 ? text : text.slice(0, slash);
  const ip = parseIp(addressText);
  if (ip === undefined || addressText.startsWith('[')) return undefined;
  const max = ip.family === 4 ? 32 : 128;
  let prefix = max;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > max) return undefined;
    prefix = Number(p);
  }
  return cidrOf(ip, prefix);
}

/** The range of `prefix` bits around `ip`. */
export function cidrOf(ip: IpAddress, prefix: number): Cidr {
  if (ip.family === 4) return { family: 4, value: (ip.value & mask(prefix)) >>> 0, prefix };
  const w = ip.words;
  return {
    family: 6,
    words: [
      (w[0] & mask(prefix)) >>> 0,
      (w[1] & mask(prefix - 32)) >>> 0,
      (w[2] & mask(prefix - 64)) >>> 0,
      (w[3] & mask(prefix - 96)) >>> 0,
    ],
    prefix,
  };
}

/** The CIDR as text (`10.0.0.0/8`, `fd00::/8`), always with its prefix. */
export function formatCidr(c: Cidr): string {
  const ip: IpAddress =
    c.family === 4 ? { family: 4, value: c.value } : { family: 6, words: c.words };
  return `${formatIp(ip)}/${c.prefix}`;
}

/** True when `ip` lies in `c` (same family only; see {@link addressForms} for the others). */
export function cidrContains(c: Cidr, ip: IpAddress): boolean {
  if (c.family === 4) {
    return ip.family === 4 && (ip.value & mask(c.prefix)) >>> 0 === c.value;
  }
  if (ip.family !== 6) return false;
  const w = ip.words;
  const n = c.words;
  return (
    (w[0] & mask(c.prefix)) >>> 0 === n[0] &&
    (w[1] & mask(c.prefix - 32)) >>> 0 === n[1] &&
    (w[2] & mask(c.prefix - 64)) >>> 0 === n[2] &&
    (w[3] & mask(c.prefix - 96)) >>> 0 === n[3]
  );
}

/** True when `outer` holds every address of `inner`. */
export function cidrCovers(outer: Cidr, inner: Cidr): boolean {
  if (outer.family !== inner.family || outer.prefix > inner.prefix) return false;
  const ip: IpAddress =
    inner.family === 4 ? { family: 4, value: inner.value } : { family: 6, words: inner.words };
  return cidrContains(outer, ip);
}

/** The 96-bit prefixes an IPv6 address carries an IPv4 address behind, in the low 32 bits. */
const CARRIERS: readonly { readonly words: readonly [number, number, number] }[] = [
  // IPv4-mapped, ::ffff:0:0/96: how dual-stack sockets write IPv4 peers.
  { words: [0, 0, 0xffff] },
  // IPv4-compatible, ::/96 (deprecated; `::` and `::1` aside).
  { words: [0, 0, 0] },
  // NAT64's well-known prefix, 64:ff9b::/96 (RFC 6052).
  { words: [0x0064ff9b, 0, 0] },
];

/**
 * The IPv4 address an IPv6 address carries (IPv4-mapped, IPv4-compatible
 * other than `::` and `::1`, or NAT64 `64:ff9b::/96`), or undefined.
 */
export function embeddedIpv4(ip: Ipv6): Ipv4 | undefined {
  const w = ip.words;
  for (const c of CARRIERS) {
    if (w[0] === c.words[0] && w[1] === c.words[1] && w[2] === c.words[2]) {
      if (c.words[2] === 0 && c.words[0] === 0 && w[3] <= 1) return undefined;
      return { family: 4, value: w[3] };
    }
  }
  return undefined;
}

/**
 * The forms an address is judged in: itself; for an IPv6 address that
 * carries an IPv4 one, that IPv4 address too; for an IPv4 address, its
 * IPv4-mapped IPv6 form too (`::ffff:a.b.c.d`), so an IPv6 range that
 * covers `::ffff:0:0/96` (such as `::/0`) holds IPv4 addresses, as it does
 * in Squid, which keeps every IPv4 address in that form.
 */
export function addressForms(ip: IpAddress): readonly IpAddress[] {
  if (ip.family === 4) return [ip, { family: 6, words: [0, 0, 0xffff, ip.value] }];
  const v4 = embeddedIpv4(ip);
  return v4 === undefined ? [ip] : [ip, v4];
}

/**
 * The IPv6 ranges that carry an IPv4 range as {@link embeddedIpv4} reads
 * them, for a matcher that knows no such rule (Squid): IPv4-compatible and
 * NAT64 (Squid itself reads IPv4-mapped addresses as IPv4).
 */
export function carrierCidrs(c: Cidr & { readonly family: 4 }): Cidr[] {
  return CARRIERS.slice(1).map((carrier) => ({
    family: 6,
    words: [carrier.words[0], carrier.words[1], carrier.words[2], c.value],
    prefix: 96 + c.prefix,
  }));
}
