/**
 * Garbage collection: instances this installation made whose Proxy is gone.
 *
 * @module
 */
import { type Logger, silentLogger } from '@proxy-op/contract';
import type { Settings } from '../defaults.js';
import type { ConfiguredProvider, ProviderSet } from '../providers/set.js';
import { withDeadline } from '../runtime/deadline.js';
import type { ProxyStore } from '../store/proxies.js';

/** The settings a GC pass uses (see the package README's flag table). */
export type GcSettings = Pick<Settings, 'gcMinAgeMs' | 'gcDryRun' | 'callTimeoutMs'>;

/** What a GC pass runs with besides its settings. */
export interface GcRun {
  /** Where deletions are logged; silent when omitted. */
  readonly logger?: Logger | undefined;
  /** The time the pass judges ages against; now when omitted. */
  readonly now?: Date | undefined;
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
  settings: GcSettings,
  run: GcRun = {},
): Promise<GcReport> {
  const log = (run.logger ?? silentLogger).child({ provider: cp.name, gc: true });
  const minAge = settings.gcMinAgeMs;
  const now = (run.now ?? new Date()).getTime();
  const timeout = settings.callTimeoutMs;
  const stop = run.signal;
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
      dryRun: settings.gcDryRun,
    };
    if (settings.gcDryRun) {
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
  settings: GcSettings,
  run: GcRun = {},
): Promise<GcReport[]> {
  const out: GcReport[] = [];
  for (const cp of providers.list()) {
    out.push(await collectGarbage(cp, store, providers.installation, settings, run));
  }
  return out;
}
