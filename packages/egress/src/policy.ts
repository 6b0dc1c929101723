/**
 * The destination policy as its users write it, and the check that names
 * every problem in one.
 *
 * @module
 */
import { type PortSpec, parseEgressEntry, parsePortSpec } from './entry.js';

/**
 * Where an egress proxy may connect to. Each field is optional; what is
 * left out keeps its default. Precedence, first match wins:
 *
 * 1. the proxy's own listening address and port is refused, whatever the
 *    lists say (a request to itself);
 * 2. a `deny` entry refuses;
 * 3. an `allow` entry exempts the destination from the default refused
 *    ranges (and the host's own addresses);
 * 4. the default refused ranges (`DEFAULT_REFUSED_RANGES`) and the host's
 *    own addresses refuse.
 *
 * Ports are judged apart from addresses (after them, so a refused
 * address names its range rather than its port): `CONNECT` may reach
 * `connectPorts`, plain HTTP `httpPorts`, and an `allow` entry that names
 * a port also admits that port for what it matches.
 *
 * An entry is a CIDR (`10.0.0.0/8`, `fd00::/8`), a bare address
 * (`10.0.0.5`, `fd00::1`), a host name (`api.example.com`) or a glob of the
 * names under a suffix (`*.example.com`, not `example.com` itself), each
 * optionally with `:port` or `:lo-hi` (`10.0.0.5:8080`, `[fd00::1]:443`,
 * `internal.example:8000-8100`). Host names match the name a request gives,
 * before resolution; addresses and CIDRs match each address the
 * destination resolves to.
 */
export interface EgressPolicy {
  /** Destinations exempt from the default refused ranges (and, with a port, admitted on it). */
  readonly allow?: readonly string[] | undefined;
  /** Destinations refused whatever `allow` says. */
  readonly deny?: readonly string[] | undefined;
  /** The ports `CONNECT` may reach; `[443]` when unset. */
  readonly connectPorts?: readonly PortSpec[] | undefined;
  /** The ports plain HTTP may reach; `[80, 443, "1025-65535"]` when unset. */
  readonly httpPorts?: readonly PortSpec[] | undefined;
}

const FIELDS = ['allow', 'deny', 'connectPorts', 'httpPorts'] as const;

/** Most entries one list may hold. */
export const MAX_ENTRIES = 1024;

/**
 * Every problem with `policy`, each naming its field path under `field`
 * and the fix, such as
 * `egress.allow[2]: "10.0.0.0/33" is not a CIDR, address or host name; ...`;
 * empty when it is good. `undefined` is a good policy (the defaults).
 */
export function egressPolicyProblems(policy: unknown, field = 'egress'): string[] {
  if (policy === undefined) return [];
  if (policy === null || typeof policy !== 'object' || Array.isArray(policy)) {
    return [`${field}: must be an object with allow, deny, connectPorts or httpPorts`];
  }
  const problems: string[] = [];
  const p = policy as Record<string, unknown>;
  for (const key of Object.keys(p)) {
    if (!(FIELDS as readonly string[]).includes(key)) {
      problems.push(`${field}.${key}: unknown field; use allow, deny, connectPorts or httpPorts`);
    }
  }
  for (const list of ['allow', 'deny'] as const) {
    const entries = p[list];
    if (entries === undefined) continue;
    if (!Array.isArray(entries) || entries.length > MAX_ENTRIES) {
      problems.push(`${field}.${list}: must be a list of at most ${MAX_ENTRIES} strings`);
      continue;
    }
    entries.forEach((e: unknown, i) => {
      if (parseEgressEntry(e) !== undefined) return;
      const shown = typeof e === 'string' ? JSON.stringify(e.slice(0, 100)) : String(e);
      problems.push(
        `${field}.${list}[${i}]: ${shown} is not a CIDR, address or host name; write 10.0.0.0/8 or api.example.com (a port after a colon: 10.0.0.5:8080, [fd00::1]:443)`,
      );
    });
  }
  for (const list of ['connectPorts', 'httpPorts'] as const) {
    const ports = p[list];
    if (ports === undefined) continue;
    if (!Array.isArray(ports) || ports.length > MAX_ENTRIES) {
      problems.push(`${field}.${list}: must be a list of at most ${MAX_ENTRIES} ports`);
      continue;
    }
    ports.forEach((spec: unknown, i) => {
      if (parsePortSpec(spec) !== undefined) return;
      const shown = typeof spec === 'string' ? JSON.stringify(spec.slice(0, 100)) : String(spec);
      problems.push(
        `${field}.${list}[${i}]: ${shown} is not a port or port range; write 443 or "8000-8100" (1 to 65535)`,
      );
    });
  }
  return problems;
}
