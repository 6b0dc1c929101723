/**
 * The entries of a destination policy's `allow` and `deny` lists and its
 * port lists, read from their text: a CIDR, a bare address, a host name or
 * a `*.suffix` glob, each optionally with a port or port range.
 *
 * @module
 */
import { type Cidr, parseCidr } from './ip.js';

/** A port (`443`) or an inclusive range of ports (`"8000-8100"`). */
export type PortSpec = number | string;

/** An inclusive range of TCP ports. */
export interface PortRange {
  /** The first port of the range. */
  readonly from: number;
  /** The last port of the range (the same as `from` for one port). */
  readonly to: number;
}

/** An `allow` or `deny` entry, read. */
export type EgressEntry =
  | {
      /** An address range, matched against each address the destination resolves to. */
      readonly kind: 'cidr';
      readonly cidr: Cidr;
      /** The ports it is limited to; every port when undefined. */
      readonly ports: PortRange | undefined;
    }
  | {
      /** A host name, matched against the name the request gives (before resolution). */
      readonly kind: 'host';
      /** Lowercase, without a trailing dot. */
      readonly name: string;
      readonly ports: PortRange | undefined;
    }
  | {
      /** `*.suffix`: every name under the suffix (not the suffix itself). */
      readonly kind: 'suffix';
      /** The suffix, lowercase, without the `*.`. */
      readonly suffix: string;
      readonly ports: PortRange | undefined;
    };

const isPort = (n: number) => Number.isInteger(n) && n >= 1 && n <= 65535;

/** A port or `lo-hi` range, or undefined when `spec` is neither. */
export function parsePortSpec(spec: unknown): PortRange | undefined {
  if (typeof spec === 'number') return isPort(spec) ? { from: spec, to: spec } : undefined;
  if (typeof spec !== 'string') return undefined;
  const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(spec);
  if (m === null) return undefined;
  const from = Number(m[1]);
  const to = m[2] === undefined ? from : Number(m[2]);
  if (!isPort(from) || !isPort(to) || to < from) return undefined;
  return { from, to };
}

/** The port range as text: `443` or `8000-8100`. */
export function formatPorts(r: PortRange): string {
  return r.from === r.to ? String(r.from) : `${r.from}-${r.to}`;
}

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

/**
 * A host name as a request may give it: dot-separated labels of letters,
 * digits, `-` and `_`, at most 253 characters, lowercase, without a
 * trailing dot; its last label not all digits (that is an address). Undefined
 * for anything else.
 */
export function normalizeHostName(text: string): string | undefined {
  const name = (text.endsWith('.') ? text.slice(0, -1) : text).toLowerCase();
  if (name === '' || name.length > 253) return undefined;
  const labels = name.split('.');
  if (!labels.every((l) => LABEL.test(l))) return undefined;
  if (/^\d+$/.test(labels[labels.length - 1] as string)) return undefined;
  return name;
}

/**
 * Reads an `allow` or `deny` entry: `10.0.0.0/8`, `10.0.0.5`, `fd00::1`,
 * `fd00::/8`, `api.example.com`, `*.example.com`, each optionally with
 * `:port` or `:lo-hi` (an IPv6 address or range in brackets then:
 * `[fd00::1]:443`, `[fd00::/8]:443`). Undefined when it is none of them.
 */
export function parseEgressEntry(text: unknown): EgressEntry | undefined {
  if (typeof text !== 'string' || text === '' || text.length > 300) return undefined;
  let head = text;
  let portText: string | undefined;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return undefined;
    head = text.slice(1, close);
    const rest = text.slice(close + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) return undefined;
      portText = rest.slice(1);
    }
    if (!head.includes(':')) return undefined; // brackets are for IPv6 only
  } else {
    const colons = text.split(':').length - 1;
    if (colons === 1) {
      const at = text.indexOf(':');
      head = text.slice(0, at);
      portText = text.slice(at + 1);
    }
  }
  let ports: PortRange | undefined;
  if (portText !== undefined) {
    ports = parsePortSpec(portText);
    if (ports === undefined) return undefined;
  }
  if (/^[0-9a-f:./]+$/i.test(head) && (head.includes(':') || /^[\d./]+$/.test(head))) {
    const cidr = parseCidr(head);
    return cidr === undefined ? undefined : { kind: 'cidr', cidr, ports };
  }
  if (head.startsWith('*.')) {
    const suffix = normalizeHostName(head.slice(2));
    return suffix === undefined ? undefined : { kind: 'suffix', suffix, ports };
  }
  const name = normalizeHostName(head);
  return name === undefined ? undefined : { kind: 'host', name, ports };
}

/** True when `host` (normalised by {@link normalizeHostName}) is what `entry` names. */
export function entryMatchesName(entry: EgressEntry, host: string): boolean {
  if (entry.kind === 'host') return entry.name === host;
  if (entry.kind === 'suffix') {
    return host.length > entry.suffix.length + 1 && host.endsWith(`.${entry.suffix}`);
  }
  return false;
}

/** True when `port` is within the entry's ports (or it names none). */
export function entryAdmitsPort(entry: EgressEntry, port: number): boolean {
  return entry.ports === undefined || (port >= entry.ports.from && port <= entry.ports.to);
}
