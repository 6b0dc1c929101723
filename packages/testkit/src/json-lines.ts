/**
 * A child process that writes JSON lines (structured logs on stderr, status
 * lines on stdout), whose lines a test can wait for.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';

/** A JSON line as parsed. */
export type JsonLine = Record<string, unknown>;

/** A running program started by {@link spawnJsonLines}. */
export interface JsonLinesProcess {
  /** Resolves when the program has ended and its output is read. */
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly pid: number | undefined;
  /** The JSON lines of stderr so far (log lines). */
  readonly logs: JsonLine[];
  /** The JSON lines of stdout so far. */
  readonly out: JsonLine[];
  /** Sends the program a signal. */
  kill(signal: NodeJS.Signals): boolean;
  /** Resolves with the first stderr line `pick` maps to a value; rejects after `ms`. */
  waitForLog<T>(pick: (line: JsonLine) => T | undefined, ms?: number): Promise<T>;
  /** Resolves with the first stdout line `pick` maps to a value; rejects after `ms`. */
  waitForStdout<T>(pick: (line: JsonLine) => T | undefined, ms?: number): Promise<T>;
}

/** Options of {@link spawnJsonLines}. */
export interface SpawnJsonLinesOptions {
  /** Variables over this process's environment. */
  readonly env?: Record<string, string> | undefined;
  readonly cwd?: string | undefined;
}

/** Collects the JSON lines of `stream` into `into`; other lines are skipped. */
function collect(stream: Readable | null, into: JsonLine[], changed: () => void): void {
  let buf = '';
  stream?.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    let i = buf.indexOf('\n');
    while (i >= 0) {
      try {
        into.push(JSON.parse(buf.slice(0, i)) as JsonLine);
      } catch {
        // not a JSON line
      }
      buf = buf.slice(i + 1);
      i = buf.indexOf('\n');
    }
    changed();
  });
}

/** Starts `command` with `args`; its JSON lines on stdout and stderr can be awaited. */
export function spawnJsonLines(
  command: string,
  args: readonly string[],
  o: SpawnJsonLinesOptions = {},
): JsonLinesProcess {
  const child: ChildProcess = spawn(command, [...args], {
    cwd: o.cwd,
    env: { ...process.env, ...o.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: JsonLine[] = [];
  const out: JsonLine[] = [];
  const waiters: Array<() => void> = [];
  const changed = () => {
    for (const w of waiters.splice(0)) w();
  };
  collect(child.stderr, logs, changed);
  collect(child.stdout, out, changed);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.on('close', (code, signal) => r({ code, signal })),
  );
  const waitIn = async <T>(
    lines: JsonLine[],
    pick: (l: JsonLine) => T | undefined,
    ms: number,
  ): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      for (const l of lines) {
        const v = pick(l);
        if (v !== undefined) return v;
      }
      if (Date.now() > end) throw new Error(`line not seen; got ${JSON.stringify(lines)}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 100);
      });
    }
  };
  return {
    exit,
    pid: child.pid,
    logs,
    out,
    kill: (sig) => child.kill(sig),
    waitForLog: (pick, ms = 60_000) => waitIn(logs, pick, ms),
    waitForStdout: (pick, ms = 60_000) => waitIn(out, pick, ms),
  };
}
