/**
 * ListByTag: every host in config order, one listing each, then the mark
 * of each domain; no state or address calls. Each instance's location is
 * its host's, from the config as Get reports it. A domain whose mark cannot
 * be read is skipped; a host that cannot be reached fails the whole call
 * (profile `fail-whole`) or is left out (`omit-unreachable`). With the
 * flavour's `listOrphanVolumes`, each host's orphaned volumes follow its
 * domains, as instances with an empty UID.
 *
 * @module
 */
import {
  type Instance,
  isMalformedAnswer,
  type Location,
  type Mark,
  markedInstances,
  type OperationContext,
} from '@proxy-op/contract';
import { classify } from './classify.js';
import type { HostConfig } from './config.js';
import { readMark } from './domain.js';
import { DOMAIN_NAME_RE, formatId } from './id.js';
import { findOrphans, type Orphan } from './orphans.js';
import { errorFields, hostLocation, type Runtime, signalOf } from './runtime.js';

/** A listed domain: its ID, its mark (when readable) and where it runs. */
interface Entry {
  readonly id: string;
  readonly mark: Mark | undefined;
  readonly location: Location;
}

/** Every domain of `installation` on every host, with ID, UID, creation time and location. */
export async function listInstances(
  rt: Runtime,
  installation: string,
  ctx: OperationContext,
): Promise<Instance[]> {
  const entries: Entry[] = [];
  const orphans: Instance[] = [];
  let skipped = 0;
  let unreachable = 0;
  for (const host of rt.config.hosts) {
    try {
      const found = await listHost(rt, ctx, host);
      entries.push(...found.entries);
      for (const o of found.orphans) {
        orphans.push({
          id: formatId({ host: host.name, name: o.name }),
          uid: '',
          createdAt: o.changedAt,
          installation,
          location: hostLocation(host),
        });
      }
      skipped += found.skipped;
    } catch (err) {
      // Only a host that cannot be reached is left out; one that refuses the key or
      // answers nonsense fails the listing, since leaving it out would hide the fault.
      if (
        rt.flavour.profile.listPartial !== 'omit-unreachable' ||
        ctx.signal?.aborted ||
        isMalformedAnswer(err) ||
        classify('list', err) !== 'Transient'
      ) {
        throw err;
      }
      unreachable++;
      rt.log.debug(
        { host: host.name, ...errorFields(err) },
        `${rt.flavour.prefix} host left out of the listing`,
      );
    }
  }
  const out = [...markedInstances(installation, entries), ...orphans];
  rt.log.debug(
    { domains: entries.length, listed: out.length, orphans: orphans.length, skipped, unreachable },
    `${rt.flavour.prefix} domains listed`,
  );
  return out;
}

async function listHost(
  rt: Runtime,
  ctx: OperationContext,
  host: HostConfig,
): Promise<{
  entries: Entry[];
  orphans: Orphan[];
  skipped: number;
}> {
  const signal = signalOf(ctx);
  const seam = await rt.hosts.pooled(host, ctx.signal);
  const domains = await seam.connectListAllDomains({ flags: 0 }, signal);
  if (!Array.isArray(domains)) throw new TypeError('a domain listing that is not a list');
  const entries: Entry[] = [];
  const location = hostLocation(host);
  let skipped = 0;
  for (const dom of domains) {
    if (typeof dom?.name !== 'string') throw new TypeError('a listed domain without a name');
    let mark: Mark | undefined;
    try {
      mark = await readMark(rt, seam, dom, signal);
    } catch (err) {
      if (signal.aborted || isMalformedAnswer(err)) throw err;
      skipped++;
      rt.log.debug(
        { host: host.name, domain: dom.name, ...errorFields(err) },
        `${rt.flavour.prefix} unreadable domain skipped`,
      );
      continue;
    }
    if (mark === undefined) continue;
    rt.log.trace({ host: host.name, domain: dom.name }, `${rt.flavour.prefix} marked domain found`);
    if (!DOMAIN_NAME_RE.test(dom.name)) {
      // Marked, but not a name this engine makes: it could never be deleted by its ID.
      skipped++;
      rt.log.debug(
        { host: host.name, domain: dom.name },
        `${rt.flavour.prefix} marked domain with a foreign name skipped`,
      );
      continue;
    }
    entries.push({ id: formatId({ host: host.name, name: dom.name }), mark, location });
  }
  const orphans = rt.flavour.listOrphanVolumes
    ? await findOrphans(rt, seam, host, new Set(domains.map((d) => d.name)), signal)
    : [];
  return { entries, orphans, skipped };
}
