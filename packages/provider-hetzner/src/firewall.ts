/**
 * The firewall of a server: one per server, named after it, carrying the
 * same mark, with one inbound rule that opens the proxy port (TCP) to the
 * allowed sources and nothing else (a Hetzner Cloud firewall drops every
 * inbound packet no rule allows). Create makes it before the server and
 * names it in the server's create request, so the server never runs
 * without it; Delete removes it once the server is gone.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { isIPv4 } from 'node:net';
import {
  adoptionProblem,
  type CheckedCreateRequest,
  type DeleteContext,
  deletionProblem,
  type OperationContext,
} from '@proxy-op/contract';
import type { FirewallRule } from './answers.js';
import type { HetznerConfig } from './config.js';
import { HetznerApiError } from './errors.js';
import { markLabels, readMark } from './labels.js';
import type { Runtime } from './runtime.js';
import type { FirewallRuleBody } from './seam.js';

/** The description of the rule the provider writes. */
export const RULE_DESCRIPTION = 'proxy-op: the proxy port';

/**
 * The firewall's name: `proxy-op-<server name>`, or, past 63 characters,
 * `proxy-op-` with the name's first 37 characters and 16 hex digits of its
 * SHA-256 (names stay short and distinct).
 */
export function firewallName(server: string): string {
  const plain = `proxy-op-${server}`;
  if (plain.length <= 63) return plain;
  const hash = createHash('sha256').update(server).digest('hex').slice(0, 16);
  return `proxy-op-${server.slice(0, 37)}-${hash}`;
}

/** A source as a rule takes it: a bare address becomes a `/32` or `/128`. */
export function asCidr(source: string): string {
  if (source.includes('/')) return source;
  return isIPv4(source) ? `${source}/32` : `${source}/128`;
}

/**
 * The sources the rule opens the port to when the firewall is on: the
 * request's `allowedSources` (IPv4 and IPv6), else `firewall.sourceRanges`;
 * neither is Permanent, before any request. Undefined when the firewall is off.
 */
export function firewallSources(
  config: HetznerConfig,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): string[] | undefined {
  if (!config.firewall.enabled) return undefined;
  const given = req.allowedSources ?? config.firewall.sourceRanges;
  const sources = [...new Set(given.map(asCidr))];
  if (sources.length === 0) {
    throw ctx.permanent(
      'hetzner.firewall is on but neither the request (allowedSources) nor hetzner.firewall.sourceRanges names an allowed source',
    );
  }
  return sources;
}

/** The rules of a server's firewall: the proxy port, TCP, from `sources`. */
export function firewallRules(port: number, sources: readonly string[]): FirewallRuleBody[] {
  return [
    {
      direction: 'in',
      protocol: 'tcp',
      port: String(port),
      source_ips: sources,
      description: RULE_DESCRIPTION,
    },
  ];
}

/** Whether a firewall's rules are exactly `want` (sources in any order). */
export function sameRules(
  have: readonly FirewallRule[],
  want: readonly FirewallRuleBody[],
): boolean {
  if (have.length !== want.length) return false;
  return want.every((w, i) => {
    const h = have[i];
    return (
      h !== undefined &&
      h.direction === w.direction &&
      h.protocol === w.protocol &&
      h.port === w.port &&
      h.sourceIps.length === w.source_ips.length &&
      w.source_ips.every((s) => h.sourceIps.includes(s))
    );
  });
}

/**
 * Makes the server's firewall, or adopts one of ours with that name
 * (another attempt of this Create made it), setting its rules when they
 * differ; someone else's firewall with the name is Permanent. Resolves
 * with the firewall's ID and whether this call made it.
 */
export async function ensureFirewall(
  rt: Runtime,
  req: CheckedCreateRequest,
  sources: readonly string[],
  ctx: OperationContext,
): Promise<{ id: number; made: boolean }> {
  const name = firewallName(req.name);
  const owner = { uid: req.uid, installation: req.installation };
  const rules = firewallRules(req.port, sources);
  try {
    const made = await rt.seam.createFirewall(
      { name, labels: markLabels(owner), rules },
      ctx.signal,
    );
    return { id: made.id, made: true };
  } catch (err) {
    if (!(HetznerApiError.isInstance(err) && err.apiCode === 'uniqueness_error')) throw err;
  }
  const found = await rt.seam.findFirewall(name, ctx.signal);
  if (found === undefined) throw ctx.transient(`firewall ${name} exists and vanished; try again`);
  const problem = adoptionProblem(readMark(found.labels, undefined), owner);
  if (problem !== undefined) {
    throw ctx.permanent(
      `a firewall named ${name} exists and ${problem}; delete it or rename the Proxy`,
    );
  }
  if (!sameRules(found.rules, rules)) {
    await rt.seam.setFirewallRules(found.id, rules, ctx.signal);
  }
  return { id: found.id, made: false };
}

/**
 * Deletes the firewall of server `server` when its mark says it is the
 * caller's; leaves it alone otherwise. Nothing to do when there is none.
 */
export async function removeFirewall(
  rt: Runtime,
  server: string,
  ctx: DeleteContext,
): Promise<void> {
  const name = firewallName(server);
  const found = await rt.seam.findFirewall(name, ctx.signal);
  if (found === undefined) return;
  const problem = deletionProblem(readMark(found.labels, undefined), ctx.owner);
  if (problem !== undefined) {
    rt.log.debug({ firewall: name, problem }, 'hetzner firewall not the caller’s; left alone');
    return;
  }
  await rt.seam.deleteFirewall(found.id, ctx.signal);
}
