/**
 * The allowed sources of an instance, read from the cloud-init the
 * operator renders (its Squid `acl <name> src <cidr>` lines).
 *
 * @module
 */
import { cidrProblem } from './cidr.js';

/**
 * The CIDRs named by `acl <name> src <cidr>...` lines in a cloud-init
 * document (the Squid configuration proxy-op renders for every Proxy), in
 * order and without duplicates. Empty when it names none; entries that are
 * not CIDRs are skipped.
 */
export function allowedSourcesFromCloudInit(cloudInit: Uint8Array): string[] {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(cloudInit);
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*acl\s+\S+\s+src\s+([^\n#]+)/gm)) {
    for (const cidr of (m[1] ?? '').trim().split(/\s+/)) {
      if (cidrProblem(cidr) === undefined && !out.includes(cidr)) out.push(cidr);
    }
  }
  return out;
}
