/**
 * Garbage collection: instances this installation made whose Proxy is gone.
 *
 * @module
 */
import { type Logger, silentLogger } from '@proxy-op/contract';
import { DEFAULTS } from '../defaults.js';
import type { ConfiguredProvider, ProviderSet } from '../providers/set.js';
import { withDeadline } from '../runtime/deadline.js';
import type { ProxyStore } from '../store/proxies.js';

/** Options of a GC pass. */
export interface GcOptions {
  /** Instances younger than this (ms) are left alone: a Create may be in flight (default 600000). */
  readonly minAgeMs?: number | undefined;
  /** Report what would be deleted, delete nothing (default false). */
  readonly dryRun?: boolean | undefined;
  /** Deadline of each provider call in ms (default 120000). */
  readonly callTimeoutMs?: number | undefined;
  /** Ends the pass: the call in flight is aborted and nothing more is deleted (the operator's stop). */
  readonly signal?: AbortSignal | undefined;
}

/** One instance GC deleted (or, in a dry run, would delete). */
export interface GcDeletion {
  /** The configured provider's name. */
  readonly provider: string;
  /** The instance's provider ID. */
  readonly id: string;
  /** The UID in the instance's mark: a Proxy that no longer exists. */
  readonly uid: string;
  /** When the instance was created, from its mark (ISO 8601). */
  readonly createdAt: string;
  /** True when the pass only reported it. */
  readonly dryRun: boolean;
}

/** The outcome of one GC pass over one provider. */
export interface GcReport {
  /** The configured provider's name. */
  readonly provider: string;
  /** How many instances of the installation the provider listed. */
  readonly listed: number;
  /** The orphans deleted (or, in a dry run, that would be). */
  readonly deleted: readonly GcDeletion[];
  /** Failures (listing, or deleting one instance); the pass goes on past them. */
  readonly errors: readonly string[];
}

/** Logged when the operator's stop ends a pass. */
const STOPPED = 'GC pass stopped: the operator is stopping';

/**
 * Collects the orphans of one provider: lists the instances carrying this
 * installation's mark and deletes each whose UID belongs to no Proxy of that
 * provider (an empty UID belongs to none) and which is older than MinAge.
 * Every deletion is logged at info and returned.
 */
export async function collectGarbage(
  cp: ConfiguredProvider,
  store: ProxyStore,
  installation: string,
  opts: GcOptions & { logger?: Logger | undefined; now?: Date | undefined } = {},
): Promise<GcReport> {
  const log = (opts.logger ?? silentLogger).child({ provider: cp.name, gc: true });
  const minAge = opts.minAgeMs ?? DEFAULTS.gcMinAgeMs;
  const now = (opts.now ?? new Date()).getTime();
  const timeout = opts.callTimeoutMs ?? DEFAULTS.callTimeoutMs;
  const stop = opts.signal;
  const errors: string[] = [];
  const deleted: GcDeletion[] = [];
  let instances: Awaited<ReturnType<typeof cp.provider.listByTag>>;
  try {
    instances = await withDeadline(timeout, stop, (o) =>
      cp.provider.listByTag({ installation, ...o }),
    );
  } catch (err) {
    errors.push(`list: ${(err as Error).message}`);
    if (stop?.aborted) log.info({ err: (err as Error).message }, STOPPED);
    else log.warn({ err: (err as Error).message }, 'GC could not list instances');
    return { provider: cp.name, listed: 0, deleted, errors };
  }
  const owners = new Set<string>();
  for (const p of store.list()) {
    if (p.spec.provider === cp.name || p.status.instanceProvider === cp.name) {
      owners.add(p.metadata.uid);
    }
  }
  // Proxies the store holds but cannot reconcile (an invalid spec) still own their instances.
  for (const uid of store.protectedUids?.() ?? []) owners.add(uid);
  for (const inst of instances) {
    if (stop?.aborted) {
      log.info({}, STOPPED);
      break;
    }
    if ((inst.installation ?? installation) !== installation) continue;
    if (inst.uid !== '' && owners.has(inst.uid)) continue;
    if (now - inst.createdAt.getTime() < minAge) continue;
    const d: GcDeletion = {
      provider: cp.name,
      id: inst.id,
      uid: inst.uid,
      createdAt: inst.createdAt.toISOString(),
      dryRun: opts.dryRun === true,
    };
    if (opts.dryRun === true) {
      log.info({ ...d }, 'GC dry run: would delete orphaned instance');
      deleted.push(d);
      continue;
    }
    try {
      // The listed UID and installation go with the Delete: an instance that took the name
      // since the listing (a Proxy created again) is left alone.
      await withDeadline(timeout, stop, (o) =>
        cp.provider.delete(inst.id, { ...o, uid: inst.uid, installation }),
      );
      log.info({ ...d }, 'GC deleted orphaned instance');
      deleted.push(d);
    } catch (err) {
      errors.push(`delete ${inst.id}: ${(err as Error).message}`);
      log.warn({ id: inst.id, err: (err as Error).message }, 'GC could not delete an instance');
    }
  }
  return { provider: cp.name, listed: instances.length, deleted, errors };
}

/** Runs {@link collectGarbage} over every configured provider, one after another. */
export async function collectAll(
  providers: ProviderSet,
  store: ProxyStore,
  opts: GcOptions & { logger?: Logger | undefined; now?: Date | undefined } = {},
): Promise<GcReport[]> {
  const out: GcReport[] = [];
  for (const cp of providers.list()) {
    out.push(await collectGarbage(cp, store, providers.installation, opts));
  }
  return out;
}
