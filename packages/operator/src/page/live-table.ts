/**
 * What `proxy-op run` prints on stdout: a live table on a terminal, JSON
 * lines otherwise; both list the Proxies (with their egress IP and probe
 * state) and the manifests (or objects) that failed validation, with their
 * problems.
 *
 * @module
 */
import { getCondition } from '../api/conditions.js';
import type { Phase, ProxyObject } from '../api/proxy.js';
import type { ProbeScheduler } from '../probe/scheduler.js';
import type { ProxyStore } from '../store/proxies.js';

/** Lays out rows in columns two spaces apart. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const r of rows) {
    r.forEach((c, i) => {
      widths[i] = Math.max(widths[i] ?? 0, c.length);
    });
  }
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

import { age } from './age.js';

export { age };

/** What {@link probeCell} and the status page read of the probes. */
export type LatestProbes = Pick<ProbeScheduler, 'latest'>;

/**
 * Where a Proxy's probes stand: the scheduler's verdict when it has one,
 * else what the `DataPlane` condition says (`off` and `no target` when it
 * is not probed); undefined when nothing is known.
 */
export function probeVerdict(
  p: ProxyObject,
  probes: LatestProbes | undefined,
): 'passing' | 'failing' | 'starting' | 'off' | 'no target' | undefined {
  const live = probes?.latest(`${p.metadata.namespace}/${p.metadata.name}`);
  if (live !== undefined) return live.verdict;
  switch (getCondition(p.status.conditions, 'DataPlane')?.reason) {
    case 'ProbePassed':
      return 'passing';
    case 'ProbeFailed':
      return 'failing';
    case 'ProbeStarting':
      return 'starting';
    case 'ProbeDisabled':
      return 'off';
    case 'NoTarget':
      return 'no target';
    default:
      return undefined;
  }
}

/**
 * A Proxy's probe state in a few words: `ok 4ms` (the last probe's total),
 * `failing get.status`, `starting` (with the last failed step), `off` (no
 * probing for its provider), from the scheduler's memory when there is one,
 * else from its status.
 */
export function probeCell(
  p: ProxyObject,
  operator?: { readonly probes?: LatestProbes | undefined },
): string {
  const live = operator?.probes?.latest(`${p.metadata.namespace}/${p.metadata.name}`);
  const last = live?.last;
  const verdict = probeVerdict(p, operator?.probes);
  const failed = last?.failure ?? p.status.probe?.lastFailure;
  const step = failed === undefined ? '' : ` ${failed.check}.${failed.step}`;
  switch (verdict) {
    case 'passing': {
      const ms = last?.totalMs ?? p.status.probe?.latency?.totalMs;
      return ms === undefined ? 'ok' : `ok ${Math.round(ms)}ms`;
    }
    case 'failing':
      return `failing${step}`;
    case 'starting':
      return last !== undefined && !last.ok ? `starting${step}` : 'starting';
    case 'off':
    case 'no target':
      return verdict;
    default:
      return '';
  }
}

/** Splits `source: path: message` into the source and the rest. */
function splitProblem(p: string): { source: string; problem: string } {
  const i = p.indexOf(': ');
  return i < 0 ? { source: '', problem: p } : { source: p.slice(0, i), problem: p.slice(i + 2) };
}

/**
 * Starts the status output: with `table`, the screen is redrawn every
 * second with every Proxy and, below, every invalid manifest and its
 * problems (and the status page's address, when one is served); with
 * `json`, one line per change (`phase: "Invalid"` for a manifest problem,
 * `"Deleted"` for a Proxy gone). `stop` prints the last state.
 */
export function startStatusView(
  store: ProxyStore,
  output: 'table' | 'json',
  operator: {
    readonly probes?: LatestProbes | undefined;
    phases(): Record<Phase, number>;
    onStatusWritten?(listener: (key: string) => void): () => void;
  },
  pageUrl?: string,
): { stop(): void } {
  const last = new Map<string, string>();
  const lastProblems = new Set<string>();
  /** Prints the line of `p` when it changed. */
  const lineOf = (p: ProxyObject) => {
    const key = `${p.metadata.namespace}/${p.metadata.name}`;
    const line = {
      proxy: key,
      phase: p.metadata.deletionTimestamp ? 'Deleting' : (p.status.phase ?? 'Pending'),
      provider: p.spec.provider,
      endpoint: p.status.endpoint,
      egressIP: p.status.egressIP,
      // The verdict and failing step only: a line per change, not per probe.
      probe: probeCell(p, operator).replace(/^ok \d+ms$/, 'ok') || undefined,
      providerID: p.status.providerID,
      state: p.status.instanceState,
      location: p.status.location,
      cost: p.status.cost,
      error: p.status.lastError,
    };
    const text = JSON.stringify(line);
    if (last.get(key) === text) return;
    last.set(key, text);
    process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`);
  };
  const render = () => {
    const problems = store.problems?.() ?? [];
    if (output === 'json') {
      const seen = new Set<string>();
      for (const p of store.list()) {
        seen.add(`${p.metadata.namespace}/${p.metadata.name}`);
        lineOf(p);
      }
      for (const key of [...last.keys()]) {
        if (!seen.has(key)) {
          last.delete(key);
          process.stdout.write(
            `${JSON.stringify({ time: new Date().toISOString(), proxy: key, phase: 'Deleted' })}\n`,
          );
        }
      }
      const current = new Set(problems);
      for (const p of current) {
        if (lastProblems.has(p)) continue;
        lastProblems.add(p);
        process.stdout.write(
          `${JSON.stringify({ time: new Date().toISOString(), phase: 'Invalid', ...splitProblem(p) })}\n`,
        );
      }
      for (const p of [...lastProblems]) if (!current.has(p)) lastProblems.delete(p);
      return;
    }
    const now = Date.now();
    const rows: string[][] = [
      ['NAMESPACE', 'NAME', 'PROVIDER', 'PHASE', 'ENDPOINT', 'EGRESS', 'PROBE', 'AGE', 'ERROR'],
    ];
    for (const p of store.list().sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))) {
      rows.push([
        p.metadata.namespace,
        p.metadata.name,
        p.spec.provider,
        p.metadata.deletionTimestamp ? 'Deleting' : (p.status.phase ?? 'Pending'),
        p.status.endpoint ?? '',
        p.status.egressIP ?? '',
        probeCell(p, operator),
        age(p.metadata.creationTimestamp, now),
        p.status.lastError ? `${p.status.lastError.class}: ${p.status.lastError.message}` : '',
      ]);
    }
    const phases = Object.entries(operator.phases())
      .filter(([, n]) => n > 0)
      .map(([ph, n]) => `${ph} ${n}`)
      .concat(problems.length > 0 ? [`Invalid ${problems.length}`] : [])
      .join(', ');
    let invalid = '';
    if (problems.length > 0) {
      const pr: string[][] = [['INVALID', 'PROBLEM']];
      for (const p of problems) {
        const { source, problem } = splitProblem(p);
        pr.push([source, problem]);
      }
      invalid = `\n\n${table(pr)}`;
    }
    const page = pageUrl === undefined ? '' : `\nstatus page: ${pageUrl}`;
    process.stdout.write(
      `\x1b[H\x1b[2J${table(rows)}${invalid}\n\n${phases || 'no Proxies'}${page}\n`,
    );
  };
  render();
  const t = setInterval(render, output === 'json' ? 100 : 1000);
  // JSON: a line for every status write as it is made, so a state that lasts less than a poll
  // (a preempted instance replaced at once) is printed too.
  const unwatch =
    output === 'json'
      ? operator.onStatusWritten?.((key) => {
          const p = store.get(key);
          if (p !== undefined) lineOf(p);
        })
      : undefined;
  return {
    stop() {
      clearInterval(t);
      unwatch?.();
      render();
    },
  };
}
