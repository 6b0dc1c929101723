/**
 * ResourceQuota for Pods, as the API server's admission plugin and the
 * quota controller apply it: the pod evaluator's usage (`pods`,
 * `count/pods`, CPU and memory requests and limits), its constraints
 * (every container must state what a quota restricts), its refusals in the
 * real server's words, and `status.hard`/`status.used` kept up to date.
 * Quota scopes are not supported (such a quota is refused on create).
 *
 * @module
 */
import { forbidden } from './errors.js';
import { isObject, type JsonObject, type JsonValue, meta, str } from './json.js';

const POD_GR = { group: '', resource: 'pods' };

/** What every container must state when a quota restricts it. */
const CONSTRAINED = new Set([
  'cpu',
  'memory',
  'requests.cpu',
  'requests.memory',
  'limits.cpu',
  'limits.memory',
]);
/** The resources the pod evaluator counts. */
const POD_RESOURCES = new Set(['pods', 'count/pods', ...CONSTRAINED]);

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};
const DECIMAL: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
/** Quantities are held exactly, in units of 10^-9. */
const NANO = 1_000_000_000n;

/** A parsed quantity: its value in nano-units, and whether it was written with a binary suffix. */
interface Quantity {
  readonly nanos: bigint;
  readonly binary: boolean;
}

/** Parses a Kubernetes quantity (`100m`, `128Mi`, `1.5`, `2e3`), or undefined when it is not one. */
export function parseQuantity(v: JsonValue | undefined): Quantity | undefined {
  const text = typeof v === 'number' ? String(v) : v;
  if (typeof text !== 'string') return undefined;
  const m = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/.exec(
    text,
  );
  if (m === null) return undefined;
  const [, sign = '', num = '', suffix = ''] = m;
  const [whole = '0', frac = ''] = num.split('.');
  let nanos = BigInt(whole || '0') * NANO + BigInt(`${frac}000000000`.slice(0, 9));
  let binary = false;
  if (suffix in BINARY) {
    nanos *= BINARY[suffix] as bigint;
    binary = true;
  } else {
    const exp = /^[eE]/.test(suffix) ? Number(suffix.slice(1)) : (DECIMAL[suffix] ?? 0);
    nanos = exp >= 0 ? nanos * 10n ** BigInt(exp) : nanos / 10n ** BigInt(-exp);
  }
  return { nanos: sign === '-' ? -nanos : nanos, binary };
}

/** The canonical text of a quantity, as `resource.Quantity.String()` prints the common cases. */
export function formatQuantity(q: Quantity): string {
  const { nanos } = q;
  if (nanos === 0n) return '0';
  if (q.binary && nanos % NANO === 0n) {
    const units = nanos / NANO;
    if (units >= 1024n) {
      for (const [suffix, f] of Object.entries(BINARY).reverse())
        if (units % f === 0n) return `${units / f}${suffix}`;
    }
  }
  for (const [suffix, exp] of Object.entries(DECIMAL).sort(([, a], [, b]) => b - a)) {
    const f = exp >= -9 ? 10n ** BigInt(exp + 9) : 1n;
    if (nanos % f === 0n) return `${nanos / f}${suffix}`;
  }
  return `${nanos}n`;
}

type Usage = Map<string, Quantity>;

function add(a: Quantity | undefined, b: Quantity): Quantity {
  return { nanos: (a?.nanos ?? 0n) + b.nanos, binary: a?.binary ?? b.binary };
}

function containers(pod: JsonObject, list: 'containers' | 'initContainers'): JsonObject[] {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const cs = spec[list];
  return Array.isArray(cs) ? cs.filter(isObject) : [];
}

function resourcesOf(c: JsonObject, kind: 'requests' | 'limits'): JsonObject {
  const r = isObject(c.resources) ? c.resources : {};
  const v = r[kind];
  return isObject(v) ? v : {};
}

/** What one container counts for: the pod evaluator's names for its requests and limits. */
function containerUsage(c: JsonObject): Usage {
  const u: Usage = new Map();
  const req = resourcesOf(c, 'requests');
  const lim = resourcesOf(c, 'limits');
  for (const r of ['cpu', 'memory']) {
    const rq = parseQuantity(req[r]);
    if (rq !== undefined) {
      u.set(r, rq);
      u.set(`requests.${r}`, rq);
    }
    const lq = parseQuantity(lim[r]);
    if (lq !== undefined) u.set(`limits.${r}`, lq);
  }
  return u;
}

/** Whether a pod still counts: not finished, and not past its deletion grace period. */
function counts(pod: JsonObject, now: number): boolean {
  const status = isObject(pod.status) ? pod.status : {};
  if (status.phase === 'Succeeded' || status.phase === 'Failed') return false;
  const m = meta(pod);
  const deleting = str(m, 'deletionTimestamp');
  if (deleting !== undefined && typeof m.deletionGracePeriodSeconds === 'number') {
    return now <= Date.parse(deleting) + m.deletionGracePeriodSeconds * 1000;
  }
  return true;
}

/** The usage of one pod: the sum over its containers, at least any one init container's. */
export function podUsage(pod: JsonObject): Usage {
  const u: Usage = new Map([
    ['pods', { nanos: NANO, binary: false }],
    ['count/pods', { nanos: NANO, binary: false }],
  ]);
  const sum: Usage = new Map();
  for (const c of containers(pod, 'containers'))
    for (const [k, q] of containerUsage(c)) sum.set(k, add(sum.get(k), q));
  for (const c of containers(pod, 'initContainers'))
    for (const [k, q] of containerUsage(c)) {
      const cur = sum.get(k);
      if (cur === undefined || q.nanos > cur.nanos) sum.set(k, q);
    }
  for (const [k, q] of sum) u.set(k, q);
  return u;
}

function quantityMap(v: JsonValue | undefined): Usage {
  const u: Usage = new Map();
  if (!isObject(v)) return u;
  for (const [k, x] of Object.entries(v)) {
    const q = parseQuantity(x);
    if (q !== undefined) u.set(k, q);
  }
  return u;
}

function toJson(u: Usage): JsonObject {
  const o: JsonObject = {};
  for (const k of [...u.keys()].sort()) o[k] = formatQuantity(u.get(k) as Quantity);
  return o;
}

function pretty(u: Usage, names: readonly string[]): string {
  return [...names]
    .sort()
    .map((k) => `${k}=${formatQuantity(u.get(k) ?? { nanos: 0n, binary: false })}`)
    .join(',');
}

/**
 * The status the quota controller gives a quota: `hard` from the spec,
 * `used` summed over the namespace's pods that still count, for the
 * pod resources the quota names (others are 0).
 */
export function quotaStatus(
  quota: JsonObject,
  pods: readonly JsonObject[],
  now: number,
): JsonObject {
  const hard = quantityMap(isObject(quota.spec) ? quota.spec.hard : undefined);
  const used: Usage = new Map();
  for (const k of hard.keys()) used.set(k, { nanos: 0n, binary: (hard.get(k) as Quantity).binary });
  for (const pod of pods) {
    if (!counts(pod, now)) continue;
    for (const [k, q] of podUsage(pod)) if (used.has(k)) used.set(k, add(used.get(k), q));
  }
  return { hard: toJson(hard), used: toJson(used) };
}

/**
 * The admission check of a new pod against the namespace's quotas (as
 * stored, so `status` is what the controller last wrote). Throws the
 * real plugin's 403 for a container that leaves out a restricted
 * resource, for a quota whose usage is not known yet, and for a quota
 * the pod would exceed.
 */
export function admitPod(pod: JsonObject, quotas: readonly JsonObject[]): void {
  const name = str(meta(pod), 'name') ?? '';
  const deny = (why: string) => forbidden(POD_GR, name, why);
  const interesting: { name: string; restricted: string[]; hard: Usage; used: Usage }[] = [];
  for (const q of [...quotas].sort((a, b) =>
    (str(meta(a), 'name') ?? '').localeCompare(str(meta(b), 'name') ?? ''),
  )) {
    const status = isObject(q.status) ? q.status : {};
    const hard = quantityMap(status.hard);
    const restricted = [...hard.keys()].filter((k) => POD_RESOURCES.has(k));
    if (restricted.length === 0) continue;
    const qname = str(meta(q), 'name') ?? '';
    const required = restricted.filter((k) => CONSTRAINED.has(k));
    const missing = new Map<string, string[]>();
    for (const c of [...containers(pod, 'containers'), ...containers(pod, 'initContainers')]) {
      const has = containerUsage(c);
      for (const r of required)
        if (!has.has(r)) missing.set(r, [...(missing.get(r) ?? []), str(c, 'name') ?? '']);
    }
    if (missing.size > 0) {
      const parts = [...missing.keys()]
        .sort()
        .map((r) => `${r} for: ${[...new Set(missing.get(r))].sort().join(',')}`);
      throw deny(`failed quota: ${qname}: must specify ${parts.join('; ')}`);
    }
    const used = quantityMap(status.used);
    if (restricted.some((k) => !used.has(k))) {
      throw deny(
        `status unknown for quota: ${qname}, resources: ${[...restricted].sort().join(',')}`,
      );
    }
    interesting.push({ name: qname, restricted, hard, used });
  }
  const delta = podUsage(pod);
  for (const q of interesting) {
    const exceeded = q.restricted.filter((k) => {
      const d = delta.get(k);
      if (d === undefined) return false;
      return (q.used.get(k)?.nanos ?? 0n) + d.nanos > (q.hard.get(k)?.nanos ?? 0n);
    });
    if (exceeded.length > 0) {
      throw deny(
        `exceeded quota: ${q.name}, requested: ${pretty(delta, exceeded)}, used: ${pretty(q.used, exceeded)}, limited: ${pretty(q.hard, exceeded)}`,
      );
    }
  }
}
