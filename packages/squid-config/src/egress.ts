/**
 * A destination policy (`@proxy-op/egress`) as Squid access rules: the
 * default refused ranges as `dst` ACLs (one per rule, with the IPv6 forms
 * that carry an IPv4 range, which Squid does not read as IPv4), `deny` and
 * `allow` entries (addresses as `dst`, names as `dstdomain -n`, globs as
 * `dstdom_regex -n -i`, an entry's port through an `all-of` ACL with a
 * `port` ACL), and the ports of `CONNECT` and plain HTTP.
 *
 * @module
 */
import {
  type Cidr,
  carrierCidrs,
  DEFAULT_CONNECT_PORTS,
  DEFAULT_HTTP_PORTS,
  DEFAULT_REFUSED_RANGES,
  type EgressEntry,
  type EgressPolicy,
  egressPolicyProblems,
  formatCidr,
  formatPorts,
  type PortRange,
  type PortSpec,
  parseCidr,
  parseEgressEntry,
  parsePortSpec,
} from '@proxy-op/egress';
import { squidSourceList } from './cidr.js';

/** The ACL and access lines of a policy. */
export interface SquidEgressLines {
  readonly acls: readonly string[];
  /** `http_access deny` lines for destinations, after the source and authentication rules. */
  readonly access: readonly string[];
}

/** An IPv4 range with the IPv6 ranges that carry it; an IPv6 range alone. */
function dstForms(c: Cidr): string[] {
  if (c.family === 6) return [formatCidr(c)];
  return [formatCidr(c), ...carrierCidrs(c).map(formatCidr)];
}

/** A `dst` list Squid holds without warnings: halves for `/0`, nothing another entry covers. */
function dstList(cidrs: readonly Cidr[]): string[] {
  return squidSourceList(cidrs.flatMap(dstForms));
}

/** `\.example\.com$`: the names under a suffix, for `dstdom_regex`. */
function suffixRegex(suffix: string): string {
  return `\\.${suffix.replaceAll('.', '\\.')}$`;
}

/** The ACL type and values that match an entry's destination (not its port). */
function entryMatch(e: EgressEntry): string {
  if (e.kind === 'cidr') return `dst ${dstList([e.cidr]).join(' ')}`;
  if (e.kind === 'host') return `dstdomain -n ${e.name}`;
  return `dstdom_regex -n -i ${suffixRegex(e.suffix)}`;
}

/** The ACLs of one list, and the `all-of` members of its entries that name a port. */
interface ListAcls {
  readonly lines: string[];
  readonly ported: readonly string[][];
}

/**
 * The ACLs of one list (`allow` or `deny`) as one `all-of` group named
 * `group`: entries without a port gathered by type, each entry with a port
 * as its match and its port together. Undefined for an empty list.
 */
function listAcls(
  prefix: string,
  group: string,
  entries: readonly EgressEntry[],
): ListAcls | undefined {
  if (entries.length === 0) return undefined;
  const lines: string[] = [];
  const members: string[][] = [];
  const ported: string[][] = [];
  const bare = entries.filter((e) => e.ports === undefined);
  const cidrs = bare.flatMap((e) => (e.kind === 'cidr' ? [e.cidr] : []));
  const names = [...new Set(bare.flatMap((e) => (e.kind === 'host' ? [e.name] : [])))];
  const globs = [...new Set(bare.flatMap((e) => (e.kind === 'suffix' ? [e.suffix] : [])))];
  if (cidrs.length > 0) {
    lines.push(`acl ${prefix}_dst dst ${dstList(cidrs).join(' ')}`);
    members.push([`${prefix}_dst`]);
  }
  if (names.length > 0) {
    lines.push(`acl ${prefix}_names dstdomain -n ${names.join(' ')}`);
    members.push([`${prefix}_names`]);
  }
  if (globs.length > 0) {
    lines.push(`acl ${prefix}_globs dstdom_regex -n -i ${globs.map(suffixRegex).join(' ')}`);
    members.push([`${prefix}_globs`]);
  }
  entries.forEach((e, i) => {
    if (e.ports === undefined) return;
    const name = `${prefix}_${i + 1}`;
    lines.push(`acl ${name} ${entryMatch(e)}`, `acl ${name}_port port ${formatPorts(e.ports)}`);
    members.push([name, `${name}_port`]);
    ported.push([name, `${name}_port`]);
  });
  for (const m of members) lines.push(`acl ${group} all-of ${m.join(' ')}`);
  return { lines, ported };
}

/** A port list as one `port` ACL's values; undefined when empty. */
function portValues(specs: readonly PortSpec[]): string | undefined {
  if (specs.length === 0) return undefined;
  return specs.map((s) => formatPorts(parsePortSpec(s) as PortRange)).join(' ');
}

/**
 * The lines of `policy` (the defaults where it says nothing). Throws a
 * `RangeError` naming every problem of a bad policy (its field paths
 * under `egress`). `connectPorts` is the older setting of the same name,
 * used when the policy names none.
 */
export function squidEgressLines(
  policy: EgressPolicy | undefined,
  connectPorts?: readonly number[] | undefined,
): SquidEgressLines {
  const problems = egressPolicyProblems(policy);
  if (problems.length > 0) throw new RangeError(problems.join('; '));
  const allow = (policy?.allow ?? []).map((e) => parseEgressEntry(e) as EgressEntry);
  const deny = (policy?.deny ?? []).map((e) => parseEgressEntry(e) as EgressEntry);
  const acls: string[] = [];
  const access: string[] = [];

  const connect = portValues(policy?.connectPorts ?? connectPorts ?? DEFAULT_CONNECT_PORTS);
  const http = portValues(policy?.httpPorts ?? DEFAULT_HTTP_PORTS);
  if (connect !== undefined) acls.push(`acl proxy_op_connect_ports port ${connect}`);
  if (http !== undefined) acls.push(`acl proxy_op_http_ports port ${http}`);

  const denied = listAcls('proxy_op_deny', 'proxy_op_denied', deny);
  if (denied !== undefined) {
    acls.push(...denied.lines);
    access.push('http_access deny proxy_op_denied');
  }
  const allowed = listAcls('proxy_op_allow', 'proxy_op_exempt', allow);
  const ported = allowed?.ported ?? [];
  if (allowed !== undefined) acls.push(...allowed.lines);
  for (const m of ported) acls.push(`acl proxy_op_exempt_ports all-of ${m.join(' ')}`);

  // Ports: a kind's own ports, or an allow entry that names the port.
  const unlessPorted = ported.length === 0 ? '' : ' !proxy_op_exempt_ports';
  access.push(
    connect === undefined
      ? `http_access deny CONNECT${unlessPorted}`
      : `http_access deny CONNECT !proxy_op_connect_ports${unlessPorted}`,
    http === undefined
      ? `http_access deny !CONNECT${unlessPorted}`
      : `http_access deny !CONNECT !proxy_op_http_ports${unlessPorted}`,
  );

  // The default ranges, one ACL per rule, unless an allow entry matches.
  const unlessAllowed = allowed === undefined ? '' : ' !proxy_op_exempt';
  access.push(`http_access deny to_localhost${unlessAllowed}`);
  const rules: string[] = [];
  const byRule = new Map<string, Cidr[]>();
  for (const r of DEFAULT_REFUSED_RANGES) {
    if (!byRule.has(r.rule)) rules.push(r.rule);
    byRule.set(r.rule, [...(byRule.get(r.rule) ?? []), parseCidr(r.cidr) as Cidr]);
  }
  for (const rule of rules) {
    const name = `proxy_op_refused_${rule.replaceAll('-', '_')}`;
    acls.push(`acl ${name} dst ${dstList(byRule.get(rule) ?? []).join(' ')}`);
    access.push(`http_access deny ${name}${unlessAllowed}`);
  }
  return { acls, access };
}
