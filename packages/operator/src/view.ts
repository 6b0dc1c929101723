/**
 * What `proxy-op run` prints on stdout: a live table on a terminal, JSON
 * lines otherwise; both list the Proxies and the manifests (or objects) that
 * failed validation, with their problems.
 *
 * @module
 */
import type { Operator } from './operator.js';
import type { ProxyStore } from './store.js';

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

/** A kubectl-style age: `42s`, `7m`, `3h`, `2d`. */
export function age(from: string, now: number): string {
  const s = Math.max(0, Math.floor((now - Date.parse(from)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** Splits `source: path: message` into the source and the rest. */
function splitProblem(p: string): { source: string; problem: string } {
  const i = p.indexOf(': ');
  return i < 0 ? { source: '', problem: p } : { source: p.slice(0, i), problem: p.slice(i + 2) };
}

/**
 * Starts the status output: with `table`, the screen is redrawn every
 * second with every Proxy and, below, every invalid manifest and its
 * problems; with `json`, one line per change (`phase: "Invalid"` for a
 * manifest problem, `"Deleted"` for a Proxy gone). `stop` prints the last
 * state.
 */
export function startStatusView(
  store: ProxyStore,
  output: 'table' | 'json',
  operator: Operator,
): { stop(): void } {
  const last = new Map<string, string>();
  const lastProblems = new Set<string>();
  const render = () => {
    const problems = store.problems?.() ?? [];
    if (output === 'json') {
      const seen = new Set<string>();
      for (const p of store.list()) {
        const key = `${p.metadata.namespace}/${p.metadata.name}`;
        seen.add(key);
        const line = {
          proxy: key,
          phase: p.metadata.deletionTimestamp ? 'Deleting' : (p.status.phase ?? 'Pending'),
          provider: p.spec.provider,
          endpoint: p.status.endpoint,
          providerID: p.status.providerID,
          error: p.status.lastError,
        };
        const text = JSON.stringify(line);
        if (last.get(key) !== text) {
          last.set(key, text);
          process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`);
        }
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
      ['NAMESPACE', 'NAME', 'PROVIDER', 'PHASE', 'ENDPOINT', 'AGE', 'ERROR'],
    ];
    for (const p of store.list().sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))) {
      rows.push([
        p.metadata.namespace,
        p.metadata.name,
        p.spec.provider,
        p.metadata.deletionTimestamp ? 'Deleting' : (p.status.phase ?? 'Pending'),
        p.status.endpoint ?? '',
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
    process.stdout.write(`\x1b[H\x1b[2J${table(rows)}${invalid}\n\n${phases || 'no Proxies'}\n`);
  };
  render();
  const t = setInterval(render, output === 'json' ? 100 : 1000);
  return {
    stop() {
      clearInterval(t);
      render();
    },
  };
}
