/**
 * The allowed sources of a proxy, read from the cloud-init the operator
 * renders: the Squid `acl <name> src <cidr>...` lines of its config. They
 * restrict the opt-in firewall rule.
 *
 * @module
 */
import { ipv4CidrProblem } from './config.js';

/**
 * The IPv4 CIDRs named by `acl <name> src ...` lines, in order and without
 * duplicates; other entries (IPv6, names) are left out. Empty when the
 * document names none.
 */
export function allowedSourcesOf(cloudInit: Uint8Array): string[] {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(cloudInit);
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*acl\s+\S+\s+src\s+(.+)$/.exec(line);
    if (m === null) continue;
    const words = (m[1] ?? '').replace(/#.*$/, '').trim().split(/\s+/);
    for (const w of words) {
      if (ipv4CidrProblem(w) === undefined && !out.includes(w)) out.push(w);
    }
  }
  return out;
}
