/**
 * One Proxy's life in a `proxy-op run --standalone` process: a temp folder
 * with a providers file and one Proxy manifest, the command started over it
 * (JSON status lines on stdout), the manifest removed once the Create is
 * done, and the command stopped with SIGTERM once the Proxy is deleted, so
 * whatever it buffers (spans) is flushed; and that life's trace held to the
 * contract. The command is given by path, so this kit depends on no
 * package of the repository.
 *
 * @module
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type JsonLine, spawnJsonLines } from './json-lines.js';
import type { OtlpReceiver, ReceivedSpan } from './otlp.js';
import { type ProviderTraceExpectation, providerTraceReport } from './span-tree.js';

/** What a Proxy's cloud-init carries in a trace test: no span, log line or error may show it. */
export const CLOUD_INIT_SENTINEL = 'CLOUDINIT-SENTINEL-7d2f-never-export-me';

/** A Proxy's own cloud-init (`spec.cloudInit`) holding {@link CLOUD_INIT_SENTINEL}. */
export const SENTINEL_CLOUD_INIT = `#cloud-config\n# ${CLOUD_INIT_SENTINEL}\n`;

/**
 * The `proxy-op` command (`bin/proxy-op.js` of `@proxy-op/operator`) as the
 * package of the file at `from` (its `import.meta.url`) resolves it: that
 * package names the operator among its devDependencies.
 */
export function proxyOpCommand(from: string | URL): string {
  const pkg = createRequire(from).resolve('@proxy-op/operator/package.json');
  return join(dirname(pkg), 'bin', 'proxy-op.js');
}

/** Options of {@link runStandaloneLifecycle}. */
export interface StandaloneLifecycleOptions {
  /** The `proxy-op` command: the operator package's `bin/proxy-op.js`. */
  readonly cli: string;
  /** The providers file's content (`installation`, `providers`), written as JSON (which is YAML). */
  readonly providers: Record<string, unknown>;
  /** The Proxy's `spec`; its `provider` names one of `providers`. */
  readonly spec: Record<string, unknown>;
  /** The Proxy's name in namespace `default` (default `web`). */
  readonly name?: string | undefined;
  /**
   * When the Create counts as done: `Ready` (the default: the instance runs
   * and has an address), or `created` (the status has a providerID: Create
   * returned), for a backend whose instances take long to boot.
   */
  readonly until?: 'Ready' | 'created' | undefined;
  /** Variables over this process's environment for the command (the OTLP receiver's, say). */
  readonly env?: Record<string, string> | undefined;
  /** Flags after the ones the run needs (default `--log-level info`). */
  readonly args?: readonly string[] | undefined;
  /**
   * Probe the instance's data plane (`Ready` then needs a passed probe);
   * default false (`--probe-interval 0`): a backend double's instances have
   * no proxy to probe, and `Ready` then says the instance runs.
   */
  readonly probe?: boolean | undefined;
  /** Called about every 100 ms while the Proxy is deleted (a kubelet letting a Pod go, say). */
  readonly whileDeleting?: (() => Promise<void>) | undefined;
  /**
   * Called once the Create is done and before the manifest is removed,
   * with the run so far: what a test does to the running Proxy's backend
   * (take its instance back, say) and waits for. `waitFor` polls the status
   * lines from `after` on (default: all of them) until `found` holds,
   * rejecting after the phase's time with the log.
   */
  readonly whileUp?:
    | ((run: {
        readonly created: JsonLine;
        readonly out: readonly JsonLine[];
        readonly logs: readonly JsonLine[];
        waitFor(
          what: string,
          found: (line: JsonLine) => boolean,
          after?: number,
        ): Promise<JsonLine>;
      }) => Promise<void>)
    | undefined;
  /** How long the Create, and then the Delete, may each take (default 60 s). */
  readonly phaseMs?: number | undefined;
}

/** How the life went. */
export interface StandaloneLifecycle {
  /** The status line that showed the Create done (`providerID`, `endpoint`, `phase`). */
  readonly created: JsonLine;
  /** How the command ended after SIGTERM. */
  readonly exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null };
  /** The command's JSON log lines (stderr). */
  readonly logs: readonly JsonLine[];
  /** The command's status lines (stdout). */
  readonly out: readonly JsonLine[];
  /** Milliseconds from the start to the Create done, and from the manifest's removal to the Proxy gone. */
  readonly createMs: number;
  readonly deleteMs: number;
}

/** The flags every run gets: no metrics port, no GC or health rounds, short polls, JSON status lines. */
const RUN_FLAGS = [
  '--listen',
  'off',
  '--gc-interval',
  '0',
  '--health-interval',
  '0',
  '--backoff-base',
  '50ms',
  '--backoff-max',
  '1s',
  '--provisioning-poll',
  '200ms',
  '--deletion-poll',
  '100ms',
  '--output',
  'json',
];

/** The log lines as text, one JSON line each, for an error message. */
function logText(logs: readonly JsonLine[]): string {
  return logs.map((l) => JSON.stringify(l)).join('\n');
}

/** Polls `found` every 100 ms (calling `tick` in between) until it finds a line; rejects after `ms`. */
async function waitForLine(
  what: string,
  found: () => JsonLine | undefined,
  ms: number,
  tick: () => Promise<void>,
  logs: readonly JsonLine[],
): Promise<JsonLine> {
  const deadline = Date.now() + ms;
  for (;;) {
    const line = found();
    if (line !== undefined) return line;
    if (Date.now() > deadline)
      throw new Error(`${what} not seen within ${ms} ms; log:\n${logText(logs)}`);
    await tick();
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Runs the command over one Proxy: created (to `until`), its manifest
 * removed, deleted (the `Deleted` status line), then SIGTERM. Rejects when a
 * phase does not finish in time, with the command's log lines; the command
 * is killed and the folder removed whatever happens.
 */
export async function runStandaloneLifecycle(
  o: StandaloneLifecycleOptions,
): Promise<StandaloneLifecycle> {
  const name = o.name ?? 'web';
  const key = `default/${name}`;
  const phaseMs = o.phaseMs ?? 60_000;
  const root = await mkdtemp(join(tmpdir(), 'proxy-op-lifecycle-'));
  const dir = join(root, 'proxies');
  await mkdir(dir);
  const providers = join(root, 'providers.yaml');
  const manifest = join(dir, `${name}.yaml`);
  await writeFile(providers, `${JSON.stringify(o.providers, null, 2)}\n`);
  await writeFile(
    manifest,
    `${JSON.stringify({ apiVersion: 'proxy-op.io/v1alpha1', kind: 'Proxy', metadata: { name }, spec: o.spec }, null, 2)}\n`,
  );
  const started = Date.now();
  const proc = spawnJsonLines(
    process.execPath,
    [
      o.cli,
      'run',
      '--standalone',
      dir,
      '--providers',
      providers,
      ...RUN_FLAGS,
      ...(o.probe === true ? [] : ['--probe-interval', '0']),
      ...(o.args ?? ['--log-level', 'info']),
    ],
    { env: o.env },
  );
  let ended = false;
  void proc.exit.then(() => {
    ended = true;
  });
  const stillRunning = async () => {
    if (ended) throw new Error(`proxy-op ended early; log:\n${logText(proc.logs)}`);
  };
  try {
    const created = await waitForLine(
      `${key} ${o.until === 'created' ? 'created' : 'Ready'}`,
      () =>
        proc.out.find(
          (l) =>
            l.proxy === key &&
            typeof l.providerID === 'string' &&
            (o.until === 'created' || l.phase === 'Ready'),
        ),
      phaseMs,
      stillRunning,
      proc.logs,
    );
    const createMs = Date.now() - started;
    await o.whileUp?.({
      created,
      out: proc.out,
      logs: proc.logs,
      waitFor: (what, found, after = 0) =>
        waitForLine(
          `${key} ${what}`,
          () => proc.out.slice(after).find((l) => l.proxy === key && found(l)),
          phaseMs,
          stillRunning,
          proc.logs,
        ),
    });
    const removed = Date.now();
    await rm(manifest);
    await waitForLine(
      `${key} Deleted`,
      () => proc.out.find((l) => l.proxy === key && l.phase === 'Deleted'),
      phaseMs,
      async () => {
        await stillRunning();
        await o.whileDeleting?.();
      },
      proc.logs,
    );
    const deleteMs = Date.now() - removed;
    proc.kill('SIGTERM');
    const exit = await proc.exit;
    return { created, exit, logs: proc.logs, out: proc.out, createMs, deleteMs };
  } finally {
    if (!ended) {
      proc.kill('SIGKILL');
      await proc.exit;
    }
    await rm(root, { recursive: true, force: true });
  }
}

/** A life's Create and Delete in the spans a receiver got, from {@link lifecycleTrace}. */
export interface LifecycleTrace {
  /** The receiver's problems and {@link providerTraceReport}'s, a sentence each; empty when all holds. */
  readonly problems: readonly string[];
  /** The backend call spans beneath every `provider.create` and every `provider.delete` of the provider. */
  readonly calls: Readonly<Record<'create' | 'delete', readonly ReceivedSpan[]>>;
  /** Their names. */
  readonly names: Readonly<Record<'create' | 'delete', readonly string[]>>;
}

/**
 * Holds the spans `receiver` got from a {@link runStandaloneLifecycle} to
 * the contract's §9 ({@link providerTraceReport}): the provider's Create and
 * Delete under the operator's `proxy.reconcile` roots, each with its
 * backend calls beneath it, the Delete's on the instance of `created`.
 */
export function lifecycleTrace(
  receiver: OtlpReceiver,
  life: StandaloneLifecycle,
  want: Pick<ProviderTraceExpectation, 'provider' | 'type' | 'callPrefix'>,
): LifecycleTrace {
  const report = providerTraceReport(receiver.spans(), {
    ...want,
    operations: ['create', 'delete'],
    root: 'proxy.reconcile',
    instanceId: String(life.created.providerID),
  });
  const calls = {
    create: report.operations.create.flatMap((o) => o.calls),
    delete: report.operations.delete.flatMap((o) => o.calls),
  };
  return {
    problems: [...receiver.problems, ...report.problems],
    calls,
    names: {
      create: calls.create.map((c) => c.name),
      delete: calls.delete.map((c) => c.name),
    },
  };
}
