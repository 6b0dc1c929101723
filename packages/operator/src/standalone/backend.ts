/**
 * `proxy-op run --standalone DIR` and `proxy-op down`: the operator over a
 * folder of Proxy manifests and the state file beside it, the credentials
 * and the pools' gateway processes beside that. `down` runs it over an
 * empty folder, which deletes every Proxy of the state file.
 *
 * @module
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Settings } from '../defaults.js';
import type { RunBackend, RunContext, RunStores } from '../manager/run.js';
import { logDefaultProvider } from '../providers/read.js';
import { FileCredentialStore } from './credentials.js';
import { GatewayProcesses } from './gateways.js';
import { keptTarget } from './probe-target.js';
import { credentialsDir, standaloneProviders } from './providers.js';
import { defaultStateFile, endpointsDir } from './state-file.js';
import { StandaloneStore } from './store.js';

/** Where a standalone run keeps its Proxies, and what it is for. */
export interface StandaloneRun {
  /** `run` keeps the folder's Proxies; `down` deletes every Proxy of the state file. */
  readonly mode: 'run' | 'down';
  /** `--standalone DIR`: the manifests folder. */
  readonly standalone: string;
  /** `--state FILE` (default `DIR.state.json`, beside the folder). */
  readonly state?: string | undefined;
}

/** The standalone mode as a backend of the shared run. */
export async function standaloneBackend(
  o: StandaloneRun & Pick<Settings, 'rescanMs' | 'gatewayRestartBaseMs' | 'gatewayRestartMaxMs'>,
  ctx: RunContext,
): Promise<RunBackend> {
  const { logger, registry, read } = ctx;
  const stateFile = resolve(o.state ?? defaultStateFile(o.standalone));
  const dir = resolve(o.standalone);
  const providers = (c: Parameters<RunBackend['providers']>[0]) =>
    standaloneProviders(c, registry, stateFile);
  logDefaultProvider(logger, read, { block: (await providers(read.config)).providers[0]?.block });
  // `down` reconciles the state file against an empty folder: every Proxy in it is deleted.
  const emptyDir = o.mode === 'down' ? await mkdtemp(join(tmpdir(), 'proxy-op-down-')) : undefined;
  let store: StandaloneStore | undefined;
  let started = false;
  return {
    graceful: false,
    targetPorts: keptTarget(stateFile),
    role: () => ({ store: 'standalone', state: 'leading', where: dir }),
    providers,
    async open(): Promise<RunStores> {
      const opened = await StandaloneStore.open({
        dir: emptyDir ?? dir,
        stateFile,
        rescanMs: o.rescanMs,
        watch: o.mode === 'run',
        logger,
      });
      store = opened;
      return {
        store: opened,
        pools: opened.pools,
        credentials: new FileCredentialStore(credentialsDir(stateFile)),
        gateways: new GatewayProcesses({
          endpointsDir: endpointsDir(stateFile),
          dir: credentialsDir(stateFile),
          logger,
          settings: o,
        }),
      };
    },
    started(stores) {
      started = true;
      // Said only now: whoever waits for this line may stop the run with a signal at once.
      logger.info(
        { dir, stateFile, proxies: stores.store.list().length },
        o.mode === 'down'
          ? 'proxy-op deleting every Proxy of the state file'
          : 'proxy-op running in standalone mode',
      );
    },
    ready: () => started,
    done: (stores) =>
      o.mode === 'down'
        ? stores.store.list().length === 0
        : stores.store.list().every((p) => p.status.phase === 'Ready'),
    async close() {
      await store?.close();
    },
    async dispose() {
      if (emptyDir !== undefined) await rm(emptyDir, { recursive: true, force: true });
    },
  };
}
