/**
 * The status page's data, made from what the operator holds in memory: the
 * store's cache of Proxies and ProviderHealth, the providers configured,
 * the probes' recent results and the Events it recorded. Each field is
 * chosen here, one by one: nothing of a Proxy goes to the page that is not
 * named below (no cloud-init text, no credentials: an endpoint loses any
 * user info, and a Proxy's credentials are named by their Secret only).
 *
 * @module
 */
import { getCondition } from '../api/conditions.js';
import type { PoolObject } from '../api/pool.js';
import type { ProviderHealth, ProxyObject } from '../api/proxy.js';
import type { ProbeScheduler } from '../probe/scheduler.js';
import { type ProxyStore, proxyKey } from '../store/proxies.js';
import type { EventLog } from './events.js';
import { probeCell, probeVerdict } from './live-table.js';
import type {
  PagePhase,
  PageProbe,
  PageRole,
  PageState,
  PoolState,
  PoolView,
  ProviderView,
  ProxyDetail,
  ProxyRow,
  RowProbe,
} from './wire.js';

/** What the page reads of the probes. */
export type PageProbes = Pick<ProbeScheduler, 'latest' | 'history'>;

/** Where the page's data comes from: the leading operator's memory. */
export interface StatusPageSource {
  /** The Proxies and ProviderHealth (the store's cache). */
  readonly store: ProxyStore;
  /** The configured providers' names and types. */
  readonly providers?: { list(): readonly { readonly name: string; readonly type: string }[] };
  /** The probes' recent results; absent when probing is off. */
  readonly probes?: PageProbes | undefined;
  /** The Events the operator recorded. */
  readonly events?: EventLog | undefined;
  /** The ProxyPools (the pool store's cache); absent where there are none. */
  readonly pools?: { listPools(): readonly PoolObject[] } | undefined;
}

/**
 * A URL-like string without its user info (`http://user:pass@host` →
 * `http://host`); anything else as it is.
 */
export function withoutCredentials(s: string): string {
  return s.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@?#]*@/i, '$1');
}

/** The phase the page shows. */
export function pagePhase(p: ProxyObject): PagePhase {
  return p.metadata.deletionTimestamp !== undefined ? 'Deleting' : (p.status.phase ?? 'Pending');
}

/** The failure of a probe in words. */
function failureText(f: { check: string; step: string; message: string } | undefined) {
  return f === undefined ? undefined : `${f.check}.${f.step}: ${f.message}`;
}

/** A Proxy's probes for its row; undefined when nothing is known of them. */
function rowProbe(
  p: ProxyObject,
  key: string,
  probes: PageProbes | undefined,
): RowProbe | undefined {
  const text = probeCell(p, { probes });
  const verdict = probeVerdict(p, probes);
  if (verdict === undefined) return undefined;
  const history = probes?.history(key) ?? [];
  const last = history.at(-1);
  const failed = history.findLast((e) => !e.ok)?.failure;
  // Not in memory (an operator that started since): as the status recorded it.
  const lf = p.status.probe?.lastFailure;
  const recorded =
    lf?.check !== undefined && lf.step !== undefined && lf.message !== undefined
      ? { check: lf.check, step: lf.step, message: lf.message }
      : undefined;
  const failure = verdict === 'passing' ? undefined : failureText(failed ?? recorded);
  return {
    verdict,
    text,
    at: last?.time ?? p.status.probe?.lastProbeTime,
    failure,
    spark: history.map((e) => (e.ok ? Math.round(e.totalMs * 10) / 10 : null)),
  };
}

/** What changes a Proxy's row besides the object: its last probe. */
export function probeStamp(key: string, probes: PageProbes | undefined): string {
  const live = probes?.latest(key);
  return live === undefined ? '' : `${live.verdict} ${live.last?.time ?? ''}`;
}

/** The Proxies table's row of a Proxy. */
export function proxyRow(p: ProxyObject, probes: PageProbes | undefined): ProxyRow {
  const key = proxyKey(p.metadata.namespace, p.metadata.name);
  const ready = getCondition(p.status.conditions, 'Ready');
  const st = p.status;
  return {
    key,
    namespace: p.metadata.namespace,
    name: p.metadata.name,
    provider: p.spec.provider,
    phase: pagePhase(p),
    ready:
      ready?.reason === undefined
        ? undefined
        : { reason: ready.reason, message: ready.message ?? '' },
    endpoint: st.endpoint === undefined ? undefined : withoutCredentials(st.endpoint),
    secret: keptIn(st.credentials?.secretName),
    egressIP: st.egressIP,
    created: p.metadata.creationTimestamp,
    probe: rowProbe(p, key, probes),
    error:
      st.lastError === undefined
        ? undefined
        : { class: st.lastError.class, message: st.lastError.message },
  };
}

/** The provider of a health object, or of a name only, for the overview. */
function providerView(
  name: string,
  type: string | undefined,
  health: ProviderHealth | undefined,
): ProviderView {
  const h = health?.status;
  return {
    name,
    type: type ?? h?.type,
    configured: type !== undefined,
    health:
      h === undefined
        ? undefined
        : {
            ready: h.ready,
            lastCheckTime: h.lastCheckTime,
            targets: h.targets.map((t) => ({
              target: t.target,
              address: withoutCredentials(t.address),
              ready: t.ready,
              reason: t.reason,
              message: t.message,
              lastTransitionTime: t.lastTransitionTime,
            })),
          },
  };
}

/**
 * Every provider the page shows: the configured ones, those with a
 * ProviderHealth, and those only named by a Proxy (not configured), by name.
 */
export function providerViews(source: StatusPageSource, proxies: readonly ProxyObject[]) {
  const types = new Map<string, string | undefined>();
  for (const cp of source.providers?.list() ?? []) types.set(cp.name, cp.type);
  const health = new Map(source.store.listHealth().map((h) => [h.name, h]));
  const names = new Set([
    ...types.keys(),
    ...health.keys(),
    ...proxies.map((p) => p.spec.provider),
  ]);
  return [...names].sort().map((name) => providerView(name, types.get(name), health.get(name)));
}

/** A pool's row of the overview: its counts and the state of its rollout and remediation. */
export function poolView(pool: PoolObject): PoolView {
  const { metadata: md, spec, status: st } = pool;
  const cond = (type: string): PoolState | undefined => {
    const c = st.conditions?.find((x) => x.type === type);
    return c === undefined
      ? undefined
      : { status: c.status, reason: c.reason ?? '', message: c.message ?? '' };
  };
  const spread = cond('SpreadDegraded');
  return {
    key: proxyKey(md.namespace, md.name),
    namespace: md.namespace,
    name: md.name,
    desired: spec.replicas ?? 1,
    ready: st.readyReplicas ?? 0,
    updated: st.updatedReplicas ?? 0,
    available: st.availableReplicas ?? 0,
    endpoints: st.endpoints?.length ?? 0,
    draining: st.draining?.length ?? 0,
    paused: spec.paused === true,
    rotateEvery: spec.rotation?.maxAge,
    providers:
      spec.spread === undefined || spec.spread.length === 0
        ? [spec.template.spec.provider]
        : spec.spread.map((x) => x.provider),
    progressing: cond('Progressing'),
    remediation: cond('RemediationAllowed'),
    spreadDegraded: spread?.status === 'True' ? spread : undefined,
  };
}

/** The pools the page shows, by key. */
export function poolViews(source: StatusPageSource | undefined): PoolView[] {
  return (source?.pools?.listPools() ?? [])
    .map(poolView)
    .sort((a, b) => a.key.localeCompare(b.key));
}

/** The whole state, made afresh (`GET api/state`). */
export function pageState(source: StatusPageSource | undefined, role: PageRole): PageState {
  const objects = source?.store.list() ?? [];
  return {
    role,
    problems: source?.store.problems?.() ?? [],
    providers: source === undefined ? [] : providerViews(source, objects),
    proxies: objects.map((p) => proxyRow(p, source?.probes)),
    pools: poolViews(source),
  };
}

/** One probe of the history, for the detail view. */
function pageProbe(e: ReturnType<PageProbes['history']>[number]): PageProbe {
  return {
    time: e.time,
    ok: e.ok,
    connectMs: e.connectMs,
    firstByteMs: e.firstByteMs,
    totalMs: e.totalMs,
    egressIP: e.egressIP,
    failure: failureText(e.failure),
  };
}

/** A Proxy's detail view, or undefined when there is no such Proxy. */
export function proxyDetail(source: StatusPageSource, key: string): ProxyDetail | undefined {
  const p = source.store.get(key);
  if (p === undefined) return undefined;
  const st = p.status;
  const placement: Record<string, string> = {};
  for (const [k, v] of Object.entries(p.spec.placement ?? {})) {
    if (typeof v === 'string') placement[k] = v;
  }
  return {
    row: proxyRow(p, source.probes),
    generation: p.metadata.generation,
    spec: {
      placement,
      port: p.spec.port,
      allowedSources: [...p.spec.allowedSources],
      unhealthyTimeout: p.spec.remediation?.unhealthyTimeout,
      customCloudInit: p.spec.cloudInit !== undefined,
    },
    instance: {
      providerID: st.providerID,
      provider: st.instanceProvider,
      ip: st.ip,
      state: st.instanceState,
      observedGeneration: st.observedGeneration,
    },
    probe:
      st.probe === undefined
        ? undefined
        : {
            target: st.probe.target,
            p50TotalMs: st.probe.p50TotalMs,
            consecutiveFailures: st.probe.consecutiveFailures,
            lastPassTime: st.probe.lastPassTime,
          },
    conditions: (st.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      lastTransitionTime: c.lastTransitionTime,
    })),
    events: source.events?.recent(key) ?? [],
    history: (source.probes?.history(key) ?? []).map(pageProbe),
  };
}

/** Where a credential is kept, for people: `Secret NAME`, or `file NAME` for a standalone file. */
function keptIn(secretName: string | undefined): string | undefined {
  if (secretName === undefined) return undefined;
  return secretName.startsWith('/') || secretName.startsWith('memory:')
    ? `file ${secretName.slice(secretName.lastIndexOf('/') + 1)}`
    : `Secret ${secretName}`;
}
