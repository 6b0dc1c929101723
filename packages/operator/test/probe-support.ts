// Test support: the operator with the local provider's real proxy processes on 127.0.75.0/24
// and its own whoami target on loopback, over a memory store; and the processes left behind,
// killed by pid only when they are still the proxy program.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Meter } from '@opentelemetry/api';
import { proxyServerPath } from '@proxy-op/forward-proxy';
import { SpawnedPrograms, startHttpEchoOrigin } from '@proxy-op/testkit';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { type ProxySpec, validateProxySpec } from '../src/api/proxy.js';
import type { Settings } from '../src/defaults.js';
import { Operator } from '../src/manager/operator.js';
import { type OwnProbeTarget, startProbeTarget } from '../src/probe/target.js';
import { parseProvidersConfig } from '../src/providers/file.js';
import { ProviderRegistry } from '../src/providers/registry.js';
import { ProviderSet } from '../src/providers/set.js';
import { MemoryCredentialStore } from '../src/store/credentials.js';
import type { PoolStore } from '../src/store/pools.js';
import { MemoryStore } from '../src/store/proxies.js';

const spawned = new SpawnedPrograms(proxyServerPath());

/** The pids of the proxies in a local provider's state folder. */
export function proxyPids(stateDir: string): number[] {
  let files: string[] = [];
  try {
    files = readdirSync(stateDir).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
  return files
    .map((f) => (JSON.parse(readFileSync(join(stateDir, f), 'utf8')) as { pid?: number }).pid)
    .filter((p): p is number => typeof p === 'number');
}

/** An operator over real local proxies, probing them against its own target. */
export interface ProbeRig {
  readonly store: MemoryStore;
  readonly operator: Operator;
  readonly providers: ProviderSet;
  readonly target: OwnProbeTarget;
  readonly stateDir: string;
  /** Where the Proxies' credentials are kept (in memory). */
  readonly credentials: MemoryCredentialStore;
  /** Stops the operator and starts another over the same store, providers and target. */
  restart(): Promise<void>;
  /** Applies a Proxy of provider `here`. */
  apply(name: string, spec?: Record<string, unknown>): void;
  /** Waits until `fn` holds (polling), for at most `ms`. */
  until(fn: () => boolean, ms?: number): Promise<void>;
  /** Deletes every Proxy, stops the operator and the target, and kills what is left. */
  close(): Promise<void>;
}

/**
 * Starts the rig: the `local` provider named `here` (with `probe` as its
 * providers-file probe block, YAML flow text), probing every 150 ms unless
 * `operator` says otherwise.
 */
export async function probeRig(
  opts: {
    probe?: string;
    addressRange?: string;
    settings?: Partial<Settings>;
    meter?: Meter;
    /** More of the local provider's block, as YAML flow text (`timeouts: {...}`). */
    local?: string;
    /** The provider type (default `local`) and the registry that knows it (a test's variant of local). */
    type?: string;
    registry?: ProviderRegistry;
    /** The ProxyPools the operator reconciles beside the Proxies. */
    pools?: (store: MemoryStore) => PoolStore;
    /** Destinations every Proxy `apply` makes allows (the test's own loopback origins). */
    allow?: () => readonly string[];
  } = {},
): Promise<ProbeRig> {
  const dir = await mkdtemp(join(tmpdir(), 'proxy-op-probe-rig-'));
  const stateDir = join(dir, 'local');
  const text = [
    'installation: probe-rig',
    'providers:',
    '  - name: here',
    `    type: ${opts.type ?? 'local'}`,
    `    ${opts.type ?? 'local'}: { stateDir: ${stateDir}, addressRange: ${opts.addressRange ?? '127.0.75.0/24'}${opts.local === undefined ? '' : `, ${opts.local}`} }`,
    ...(opts.probe === undefined ? [] : [`    probe: ${opts.probe}`]),
    '',
  ].join('\n');
  const load = await parseProvidersConfig(text, opts.registry ?? new ProviderRegistry());
  if (!load.ok) throw new Error(load.problems.join('\n'));
  const providers = new ProviderSet();
  const applied = await providers.apply(load.config);
  if (applied.problems.length > 0) throw new Error(applied.problems.join('\n'));
  const target = await startProbeTarget({ listen: '127.0.0.1:0', tlsListen: '127.0.0.1:0' });
  const store = new MemoryStore();
  const credentials = new MemoryCredentialStore();
  const pools = opts.pools?.(store);
  const make = () =>
    new Operator({
      store,
      pools,
      providers,
      probeTarget: target.target,
      meter: opts.meter,
      credentials,
      settings: {
        gcIntervalMs: 0,
        healthIntervalMs: 0,
        backoffBaseMs: 50,
        probeIntervalMs: 150,
        probeTimeoutMs: 500,
        failureThreshold: 2,
        startupTimeoutMs: 3_000,
        ...opts.settings,
      },
    });
  let operator = make();
  operator.start();
  const until = async (fn: () => boolean, ms = 30_000) => {
    const deadline = Date.now() + ms;
    while (!fn()) {
      if (Date.now() > deadline) throw new Error('the awaited state did not come');
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return {
    store,
    get operator() {
      return operator;
    },
    restart: async () => {
      await operator.stop();
      operator = make();
      operator.start();
    },
    providers,
    target,
    stateDir,
    credentials,
    apply: (name, spec = {}) => {
      // The test's own origins are on loopback, which the proxies refuse unless allowed.
      const allow = [
        ...(opts.allow?.() ?? []),
        ...((spec.egress as { allow?: string[] })?.allow ?? []),
      ];
      const egress = allow.length === 0 ? spec.egress : { ...(spec.egress as object), allow };
      const v = validateProxySpec({
        provider: 'here',
        allowedSources: ['127.0.0.0/8'],
        ...spec,
        ...(egress === undefined ? {} : { egress }),
      });
      if (!v.ok) throw new Error(JSON.stringify(v.problems));
      store.apply('default', name, v.value as ProxySpec);
    },
    until,
    close: async () => {
      for (const p of store.list()) store.delete(`${p.metadata.namespace}/${p.metadata.name}`);
      await until(() => store.list().length === 0, 30_000).catch(() => {});
      await operator.stop();
      await providers.close();
      await target.close();
      for (const pid of proxyPids(stateDir)) spawned.pids.add(pid);
      await spawned.killAll();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A test file's rigs over real local proxies: `start` makes the test's rig
 * (`defaults` under its own options), closed after the test; `origin()` is
 * an HTTP origin for the users' requests (the probe target wants the
 * probe's own nonce), up for the whole file.
 */
export function rigSuite(defaults: Parameters<typeof probeRig>[0]) {
  let rig: ProbeRig | undefined;
  let echo: Awaited<ReturnType<typeof startHttpEchoOrigin>> | undefined;
  let url = '';
  beforeAll(async () => {
    echo = await startHttpEchoOrigin();
    url = `http://127.0.0.1:${echo.port}/page`;
  });
  afterAll(() => {
    echo?.server.close();
  });
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  }, 60_000);
  return {
    start: async (opts?: Parameters<typeof probeRig>[0]): Promise<ProbeRig> => {
      rig = await probeRig({
        allow: () => (echo === undefined ? [] : [`127.0.0.1:${echo.port}`]),
        ...defaults,
        ...opts,
      });
      return rig;
    },
    origin: () => url,
  };
}
