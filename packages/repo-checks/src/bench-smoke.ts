// The benchmarks' smoke run: a package's `npm run bench` in its small mode (BENCH_SMOKE=1: tiny
// N, one short round, only the peers that are installed), bounded in time, and its output held to
// the benchmarks' table convention. It asserts that a benchmark ran and measured, never how fast.
//
// The convention every benchmark follows:
// - stdout carries the results as markdown tables: a header line, a separator line
//   (`|---|---:|`), then one row per measure; the first cell names the measure;
// - a figure is a cell that starts with a number (`1234 req/s`, `0.95`, `1.02×`, `12 ms (11)`);
//   a cell that does not apply is `—` (or `–`, `-`, `n/a`); other cells are words (a phase);
// - a count that was measured and came out zero, where zero is a real answer (re-reads after a
//   conflict, errors), is written `none`, which counts as a figure;
// - every row has at least one figure, and not all of its figures are a bare zero (a
//   zero-request run, a roll with no replacement); no cell is empty or says NaN, Infinity,
//   undefined or null;
// - stderr carries a line `bench: <part>…` when each part starts, so a stall names where it is;
// - a benchmark whose subject cannot run here at all (libvirt's benchmarks with no libvirtd) prints
//   `skipped: <why>` on stdout and no table, which passes except under CI=true, where every peer
//   of .ci/apt-packages is installed.
import { spawn } from 'node:child_process';

/** The table check's verdict over one run's stdout. */
export interface TableCheck {
  /** The rows of every table found. */
  readonly rows: number;
  /** One line per problem; none when the output holds to the convention. */
  readonly failures: readonly string[];
}

const NOT_APPLICABLE = new Set(['—', '–', '-', 'n/a']);
const IMPOSSIBLE = /\b(NaN|Infinity|undefined|null)\b/i;
const FIGURE = /^[~≈<>±+-]?\s*(\d[\d,]*(?:\.\d+)?|\.\d+)(?:e[+-]?\d+)?/i;
const SEPARATOR = /^\|(\s*:?-+:?\s*\|)+\s*$/;

function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((c) => c.trim());
}

/** Reads the markdown tables of a benchmark's stdout and checks every row of each. */
export function checkTables(stdout: string): TableCheck {
  // Colour codes (a test runner's reporter may print them before a line) are not part of it.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape is what is removed
  const lines = stdout.replace(/\x1b\[[0-9;]*m/g, '').split(/\r?\n/);
  const failures: string[] = [];
  let rows = 0;
  for (let i = 0; i < lines.length; i++) {
    const header = lines[i]?.trim() ?? '';
    if (!header.startsWith('|') || !SEPARATOR.test(lines[i + 1]?.trim() ?? '')) continue;
    const title = cells(header).join(' | ');
    i += 2;
    for (; i < lines.length; i++) {
      const line = lines[i]?.trim() ?? '';
      if (!line.startsWith('|')) break;
      rows++;
      const [label = '', ...rest] = cells(line);
      const where = `row "${label}" of the table "${title}"`;
      if (label === '') failures.push(`a row with no label in the table "${title}": ${line}`);
      const bad = rest.filter((c) => c === '' || IMPOSSIBLE.test(c));
      if (bad.length > 0) {
        failures.push(`${where}: a figure that cannot be (${bad.map((c) => `"${c}"`).join(', ')})`);
        continue;
      }
      const figures = rest
        .filter((c) => !NOT_APPLICABLE.has(c))
        .map((c) => (c === 'none' ? '1' : FIGURE.exec(c)?.[1]))
        .filter((f): f is string => f !== undefined)
        .map((f) => Number(f.replaceAll(',', '')));
      if (figures.length === 0) failures.push(`${where}: no figure`);
      else if (figures.every((f) => f === 0))
        failures.push(`${where}: every figure is zero (it measured nothing)`);
    }
  }
  if (rows === 0) failures.push('no table: stdout has no markdown table with a row of figures');
  return { rows, failures };
}

/** What to run and how long it may take. */
export interface SmokeOptions {
  /** The package folder to run in. */
  readonly cwd: string;
  /** The command, `npm run bench` unless named. */
  readonly command?: readonly string[];
  /** How long the run may take before it is killed and counted as hung (default 90 s). */
  readonly timeoutMs?: number;
  /** Extra environment; BENCH_SMOKE=1 is always set. */
  readonly env?: Readonly<Record<string, string>>;
  /** Called with each chunk of the benchmark's stderr as it comes (its part lines). */
  readonly onStderr?: (chunk: string) => void;
}

/** The verdict of one smoke run. */
export interface SmokeResult {
  readonly ok: boolean;
  readonly failures: readonly string[];
  readonly rows: number;
  /** Why the benchmark did not run, when it said so (`skipped: <why>`) and that was accepted. */
  readonly skipped?: string;
  readonly seconds: number;
  readonly stdout: string;
  readonly stderr: string;
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone
  }
}

/**
 * Runs a package's benchmark in smoke mode, in a process group of its own, and fails it when it
 * throws or exits non-zero, runs past the bound (the whole group is killed), or prints no table
 * or a row that measured nothing.
 */
export async function runBenchSmoke(options: SmokeOptions): Promise<SmokeResult> {
  const [file = 'npm', ...args] = options.command ?? ['npm', 'run', 'bench'];
  const timeoutMs = options.timeoutMs ?? 90_000;
  const t0 = performance.now();
  const child = spawn(file, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env, BENCH_SMOKE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    options.onStderr?.(d);
  });
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    killGroup(child.pid, 'SIGTERM');
    setTimeout(() => killGroup(child.pid, 'SIGKILL'), 2_000).unref();
  }, timeoutMs);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
    child.once('error', (e) => {
      stderr += `${e.message}\n`;
      resolve([null, null]);
    });
    child.once('exit', (c, s) => resolve([c, s]));
  });
  clearTimeout(timer);
  // Whatever the benchmark left running in its group (a peer it did not stop) goes too, so its
  // pipes close.
  killGroup(child.pid, 'SIGKILL');
  await new Promise<void>((resolve) => {
    if (child.stdout.closed && child.stderr.closed) return resolve();
    const t = setTimeout(resolve, 2_000);
    child.once('close', () => {
      clearTimeout(t);
      resolve();
    });
  });
  const seconds = (performance.now() - t0) / 1000;
  const failures: string[] = [];
  if (hung) {
    const parts = stderr.match(/^bench: .*$/gm) ?? [];
    const last = parts.at(-1);
    failures.push(
      `hung: still running after ${(timeoutMs / 1000).toFixed(0)} s, killed; ` +
        (last === undefined ? 'it printed no part line' : `its last part line: "${last}"`),
    );
  } else if (code !== 0) {
    failures.push(
      `exited with ${signal === null ? `code ${code}` : `signal ${signal}`}` +
        `; the end of its stderr:\n${stderr.split('\n').slice(-15).join('\n')}`,
    );
  }
  const tables = checkTables(stdout);
  const skipped = /^skipped: (.*)$/m.exec(stdout)?.[1];
  const ci = (options.env?.CI ?? process.env.CI) === 'true';
  if (skipped !== undefined && tables.rows === 0 && !hung && code === 0) {
    if (ci) failures.push(`skipped under CI=true, where its peers must be installed: ${skipped}`);
    return { ok: failures.length === 0, failures, rows: 0, skipped, seconds, stdout, stderr };
  }
  if (!hung) failures.push(...tables.failures);
  if (!/^bench: /m.test(stderr)) failures.push('no part line: stderr has no "bench: <part>" line');
  return { ok: failures.length === 0, failures, rows: tables.rows, seconds, stdout, stderr };
}
