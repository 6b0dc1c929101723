/**
 * The seam of the `local` provider: one signal-last method per backend
 * call (state files, processes, sockets), and where it is decorated with
 * the contract's `observeSeam`: a `local.<call>` child span and a debug
 * line per call and, through its `budget` option, the per-call budget of
 * `timeouts`. The production adapter is `createProcessSeam` (`process.ts`);
 * tests wrap it.
 *
 * @module
 */
import type { Tracer } from '@opentelemetry/api';
import { type Logger, observeSeam } from '@proxy-op/contract';
import type { InstanceRecord } from './record.js';

/** The backend calls of the `local` provider. Every method takes a signal last. */
export interface LocalSeam {
  /**
   * Reads `<name>.json`; undefined when there is none. An unreadable file
   * reads as unmarked. Rejects with the contract's `UnsafePathError` when
   * the state folder is not private, or the file is not a regular file of
   * ours (a link, another user's file): nothing of it is trusted.
   */
  readState(name: string, signal?: AbortSignal): Promise<InstanceRecord | undefined>;
  /**
   * Writes `<name>.json` atomically (an exclusive temporary file, mode
   * 0600, then rename), in the state folder made private first.
   */
  writeState(record: InstanceRecord, signal?: AbortSignal): Promise<void>;
  /**
   * Writes `<name>.passwd` atomically (temporary file, then rename), mode
   * 0600; the running proxy re-reads it when it changes.
   */
  writePasswordFile(name: string, contents: Uint8Array, signal?: AbortSignal): Promise<void>;
  /**
   * Whether `<name>.passwd` is still the file the provider wrote: a regular
   * file (not a link) this process's user owns and nobody else can write.
   * False when it is gone or is anything else (a file another user renamed
   * over it), so the proxy reading it no longer serves on our terms.
   */
  ownsPasswordFile(name: string, signal?: AbortSignal): Promise<boolean>;
  /** Removes `<name>.json`, its password file and the instance's logs; no error when they are gone. */
  removeState(name: string, signal?: AbortSignal): Promise<void>;
  /** Every state file of ours in the folder; one that is not a regular file of ours is skipped. */
  listStates(signal?: AbortSignal): Promise<InstanceRecord[]>;
  /**
   * Spawns the detached proxy process for `record` and records its pid
   * (phase `running`) in the state file before it resolves with the pid, so
   * no process ever runs unrecorded, whatever happens to the caller: the
   * signal stops the waiting, never the spawn. Before it spawns, the files
   * the proxy opens by their names are made or checked: the access log and
   * the diagnostics log (`<name>.log`, the process's output) opened without
   * following a link, mode 0600, and the password file a regular file of
   * ours; anything planted in their place is refused, never written.
   */
  spawn(record: InstanceRecord, signal?: AbortSignal): Promise<number>;
  /** Whether `pid` is alive and is the proxy of `name`. */
  alive(name: string, pid: number, signal?: AbortSignal): Promise<boolean>;
  /**
   * Whether the proxy of `name` answers its health check on `address:port`,
   * asked from `address` itself (the proxy's health source).
   */
  probe(name: string, address: string, port: number, signal?: AbortSignal): Promise<boolean>;
  /**
   * Waits until the proxy of `name` (process `pid`) answers its health
   * check on `address:port`, checking every {@link ANSWER_POLL_MS}: resolves
   * `answering`, `exited` once the process is gone, or `timeout` after
   * `ms`. One call however long the proxy takes to start, so a Create makes
   * the same calls on a fast machine and a slow one.
   */
  awaitAnswering(
    name: string,
    pid: number,
    address: string,
    port: number,
    ms: number,
    signal?: AbortSignal,
  ): Promise<'answering' | 'exited' | 'timeout'>;
  /**
   * SIGTERM, then SIGKILL after `timeouts.stopMs`, then {@link KILL_GRACE_MS}
   * more; resolves once the process has exited.
   */
  kill(name: string, pid: number, signal?: AbortSignal): Promise<void>;
  /** The last lines of the instance's diagnostics log, for error messages. */
  logTail(name: string, signal?: AbortSignal): Promise<string>;
  /** Whether `address:port` can be bound now (false when in use; throws when the address cannot be bound at all). */
  bindable(address: string, port: number, signal?: AbortSignal): Promise<boolean>;
  /**
   * Creates the state folder when needed (mode 0700), refuses one that is
   * not private, and writes and removes a file in it.
   */
  checkStateDir(signal?: AbortSignal): Promise<void>;
}

/** How often {@link LocalSeam.awaitAnswering} checks a starting proxy, in ms. */
export const ANSWER_POLL_MS = 25;

/** How long a kill waits after SIGKILL for the process to be gone, in ms. */
export const KILL_GRACE_MS = 2_000;

/**
 * The times the seam's budgets are made of: the config's `timeouts`, as
 * far as a budget reads them (the seam's own need, so the seam does not
 * depend on the config block).
 */
export interface SeamTimeouts {
  /** From spawning a proxy until it answers. */
  readonly startMs: number;
  /** From SIGTERM until the process must have exited. */
  readonly stopMs: number;
  /** One health probe of a proxy. */
  readonly probeMs: number;
  /** One state-folder or process-table operation. */
  readonly fileMs: number;
}

/**
 * The budget of each seam call (contract §4.16), from `timeouts`:
 * state-folder and process-table calls `fileMs`, a probe `probeMs` (plus
 * `fileMs`), the wait for a starting proxy `startMs` plus one probe (plus
 * `fileMs`), a spawn `startMs`, a kill `stopMs` plus the SIGKILL grace
 * (plus `fileMs`).
 */
export function seamBudgets(t: SeamTimeouts): Readonly<Record<keyof LocalSeam, number>> {
  return {
    readState: t.fileMs,
    writeState: t.fileMs,
    writePasswordFile: t.fileMs,
    ownsPasswordFile: t.fileMs,
    removeState: t.fileMs,
    listStates: t.fileMs,
    alive: t.fileMs,
    logTail: t.fileMs,
    checkStateDir: t.fileMs,
    bindable: t.fileMs,
    probe: t.probeMs + t.fileMs,
    awaitAnswering: t.startMs + t.probeMs + t.fileMs,
    spawn: t.startMs,
    kill: t.stopMs + KILL_GRACE_MS + t.fileMs,
  };
}

/** Options of {@link decorateSeam}. */
export interface DecorateOptions {
  /** The configured provider name, on every line. */
  readonly provider: string;
  /** Where the debug lines go. */
  readonly logger: Logger;
  /** Makes the `local.<call>` child spans; the global tracer when unset. */
  readonly tracer?: Tracer | undefined;
  /** The per-call budgets' source (`config.timeouts`). */
  readonly timeouts: SeamTimeouts;
}

/**
 * Wraps a seam once, whichever it is (the production one or a test's):
 * each call gets the caller's signal joined with its budget
 * ({@link seamBudgets}), and a call past it rejects with the contract's
 * `BudgetError` (Transient; `Timeout` in the Checker); each call is a
 * `local.<call>` child span and one debug line naming the instance.
 */
export function decorateSeam(seam: LocalSeam, o: DecorateOptions): LocalSeam {
  const budgets: Readonly<Record<string, number>> = seamBudgets(o.timeouts);
  return observeSeam(seam, {
    prefix: 'local',
    provider: o.provider,
    tracer: o.tracer,
    logger: o.logger,
    budget: (method) => budgets[method],
    fields: (method, args) => {
      const first = args[0];
      if (typeof first === 'string' && method !== 'bindable') return { name: first };
      if (typeof first === 'object' && first !== null && 'name' in first) {
        return { name: String((first as { name: unknown }).name) };
      }
      return {};
    },
  });
}
