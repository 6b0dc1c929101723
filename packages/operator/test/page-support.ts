// Test support for the status page: Debian's Chromium driven by playwright-core (a fresh
// profile each launch, the flags that keep it off the network), a folder for screenshots
// outside the repo, a reader of the event stream, and a "fleet": the operator in process over
// a memory store with a provider whose instances are real forward proxies on their own
// loopback addresses (started in this process, as the probe benchmark runs them), probed
// through their data plane against the operator's own whoami target.
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CheckContext,
  type CheckTarget,
  type Instance,
  idFormat,
  type ProviderImplementation,
  type ProviderModule,
  requireOneOf,
} from '@proxy-op/contract';
import { type ForwardProxy, startForwardProxy } from '@proxy-op/forward-proxy';
import { profile } from '@proxy-op/providertest/reference';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { type PoolSpec, validatePoolSpec } from '../src/api/pool.js';
import { validateProxySpec } from '../src/api/proxy.js';
import { DEFAULTS, type Settings } from '../src/defaults.js';
import { Operator } from '../src/manager/operator.js';
import { type StatusPage, startStatusPage } from '../src/page/server.js';
import type { PageRole } from '../src/page/wire.js';
import { type OwnProbeTarget, startProbeTarget } from '../src/probe/target.js';
import type { AnyProviderModule } from '../src/providers/registry.js';
import { ProviderSet } from '../src/providers/set.js';
import { MemoryPoolStore } from '../src/store/pools.js';
import { MemoryStore } from '../src/store/proxies.js';

/** Debian's Chromium, which `.ci/run` installs. */
export const CHROMIUM = '/usr/bin/chromium';

/** A browser with a fresh profile; `close` removes the profile too. */
export interface TestBrowser {
  readonly context: BrowserContext;
  /** A new page of `width` × `height` CSS pixels; console errors and CSP reports are collected. */
  page(width?: number, height?: number): Promise<{ page: Page; errors: string[] }>;
  close(): Promise<void>;
}

/** Launches headless Chromium off the network (no background requests, no updates, no QUIC). */
export async function launchBrowser(): Promise<TestBrowser> {
  const profileDir = await mkdtemp(join(tmpdir(), 'proxy-op-chromium-'));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
    viewport: { width: 1440, height: 900 },
  });
  return {
    context,
    async page(width = 1440, height = 900) {
      const page = await context.newPage();
      await page.setViewportSize({ width, height });
      const errors: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      page.on('pageerror', (e) => errors.push(e.message));
      return { page, errors };
    },
    async close() {
      await context.close();
      await rm(profileDir, { recursive: true, force: true });
    },
  };
}

/** A folder for a test's artifacts (screenshots), outside the repo; its path is printed. */
export async function artifactsDir(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `proxy-op-${name}-`));
  console.log(`status page artifacts: ${dir}`);
  return dir;
}

/** One message of the event stream. */
export interface StreamMessage {
  readonly event: string;
  readonly data: string;
}

/**
 * Reads the event stream at `url` until `done` says so (or `ms` pass); resolves with every
 * message, the raw text and the response headers.
 */
export function readStream(
  url: string,
  done: (messages: readonly StreamMessage[]) => boolean,
  ms = 10_000,
): Promise<{ messages: StreamMessage[]; raw: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, (res) => {
      let raw = '';
      // What has come since the last complete message: each message is parsed once.
      let tail = '';
      const messages: StreamMessage[] = [];
      const finish = () => {
        clearTimeout(timer);
        req.destroy();
        resolve({ messages, raw, headers: res.headers });
      };
      const timer = setTimeout(finish, ms);
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        raw += d;
        const blocks = (tail + d).split('\n\n');
        tail = blocks.pop() ?? '';
        for (const block of blocks) {
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event !== undefined && data !== undefined) messages.push({ event, data });
        }
        if (done(messages)) finish();
      });
      res.on('end', () => finish());
      res.on('error', () => finish());
    });
    req.on('error', reject);
    req.end();
  });
}

/** Waits until `fn` holds (polling), for at most `ms`. */
export async function until(
  fn: () => boolean,
  ms = 30_000,
  what = 'the awaited state',
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`${what} did not come`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Waits until a detail view lists the conditions a reconciled Proxy has and Events with each
 * of `reasons`; resolves with the reasons shown.
 */
export async function detailShows(page: Page, reasons: readonly string[]): Promise<string[]> {
  const conditions = page.locator('table.conditions tbody tr td:first-child');
  await expect
    .poll(() => conditions.allTextContents(), { timeout: 20_000 })
    .toEqual(expect.arrayContaining(['Ready', 'ProviderConfigured', 'DataPlane']));
  const shown = page.locator('.event-reason');
  await expect
    .poll(() => shown.allTextContents(), { timeout: 20_000 })
    .toEqual(expect.arrayContaining([...reasons]));
  return shown.allTextContents();
}

// ---- the fleet ----

const ids = idFormat(['fleet', ':name'], { name: /^[a-z0-9-]+$/ });

/** The instances of the fleet provider: forward proxies in this process. */
export class Fleet {
  readonly proxies = new Map<string, ForwardProxy>();
  /** Names of Proxies whose instances report Provisioning for good (no proxy started for them). */
  readonly provisioning = new Set<string>();
  /** Health check answers by target: a message, ready or not. */
  readonly health = new Map<string, { ready: boolean; reason: string; message: string }>();
  #next = 1;
  readonly #addresses = new Map<string, string>();

  /** Where the proxies' password files are written. */
  readonly dir = mkdtempSync(join(tmpdir(), 'proxy-op-fleet-'));

  constructor(readonly base: string) {}

  /** The address of instance `name`. */
  address(name: string): string {
    let a = this.#addresses.get(name);
    if (a === undefined) {
      a = `${this.base}.${this.#next++}`;
      this.#addresses.set(name, a);
    }
    return a;
  }

  /** Stops the proxy of the instance whose name starts with `prefix` (its probes then fail). */
  async stop(prefix: string): Promise<void> {
    for (const [name, p] of this.proxies) {
      if (name.startsWith(prefix)) {
        this.proxies.delete(name);
        await p.close(0);
      }
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.proxies.values()].map((p) => p.close(0)));
    this.proxies.clear();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A provider module whose instance is a forward proxy of `fleet`; machine types: small, large. */
export function fleetModule(fleet: Fleet): AnyProviderModule {
  const mod: ProviderModule<Record<string, unknown>, object, { name: string }> = {
    type: 'fleet',
    // The fleet's proxies are replaced to change credentials (no updateAuth here).
    profile: { ...profile, credentialRotation: 'replace' },
    configSchema: { '~standard': { version: 1, vendor: 'test', validate: () => ({ value: {} }) } },
    classify: () => 'Transient',
    create: (provider): ProviderImplementation<{ name: string }> => {
      const made = new Map<string, { uid: string; at: Date; booting: boolean }>();
      return {
        ids,
        lockKey: (id) => id.name,
        checker: {
          targets: () =>
            [...fleet.health.keys()].map((t) => ({ target: t, address: `fleet://${t}` })),
          check: async (t: CheckTarget, _ctx: CheckContext) => {
            const h = fleet.health.get(t.target);
            return {
              reason: h?.reason ?? 'Reachable',
              message: h?.message ?? 'ok',
              ready: h?.ready,
            };
          },
        },
        create: async (req) => {
          requireOneOf(
            provider,
            'placement.machineType',
            req.placement.machineType ?? 'small',
            ['small', 'large'],
            'the fleet',
          );
          const booting = [...fleet.provisioning].some((n) => req.name.includes(`-${n}-`));
          made.set(req.name, { uid: req.uid, at: new Date(), booting });
          const address = fleet.address(req.name);
          if (!booting && !fleet.proxies.has(req.name)) {
            // The proxy asks for the request's credentials, as a real provider's would.
            let auth: { realm: string; passwordFile: string } | undefined;
            if (req.auth !== undefined) {
              const passwordFile = join(fleet.dir, `${req.name}.passwd`);
              await writeFile(passwordFile, req.auth.passwordFile, { mode: 0o600 });
              auth = { realm: req.auth.realm, passwordFile };
            }
            fleet.proxies.set(
              req.name,
              await startForwardProxy({
                name: req.name,
                address,
                port: req.port,
                allowedSources: ['127.0.0.0/8'],
                outgoingAddress: address,
                auth,
                // The policy the operator asks for: its probe target, on loopback, allowed.
                ...(req.egress === undefined ? {} : { egress: req.egress }),
              }),
            );
          }
          return ids.format({ name: req.name });
        },
        get: async (id): Promise<Instance> => {
          const m = made.get(id.name);
          // A stopped proxy's instance still runs: its probes fail.
          const booting = m?.booting === true;
          return {
            id: ids.format(id),
            state: booting ? 'Provisioning' : 'Running',
            ip: booting ? undefined : fleet.address(id.name),
            uid: m?.uid ?? '',
            createdAt: m?.at ?? new Date(),
          };
        },
        delete: async (id) => {
          made.delete(id.name);
          await fleet.proxies.get(id.name)?.close(0);
          fleet.proxies.delete(id.name);
        },
        list: async () => [],
      };
    },
  };
  return mod as unknown as AnyProviderModule;
}

/** The operator over a memory store and fleet providers, with its page. */
export interface FleetRig {
  readonly store: MemoryStore;
  readonly operator: Operator;
  readonly page: StatusPage;
  readonly target: OwnProbeTarget;
  readonly fleets: ReadonlyMap<string, Fleet>;
  /** The ProxyPools, which the page shows. */
  readonly pools: MemoryPoolStore;
  /** Applies a Proxy (namespace `default` unless the name says `ns/name`). */
  apply(name: string, spec?: Record<string, unknown>): void;
  /** Applies a ProxyPool (`ns/name` or `name`) with `spec` over a template on the first fleet. */
  applyPool(name: string, spec: Record<string, unknown>): PoolSpec;
  close(): Promise<void>;
}

/**
 * Starts the rig: one fleet provider per entry of `providers` (name → the /24 of its
 * addresses, such as `127.0.83`), probing every `probeMs`.
 */
export async function fleetRig(opts: {
  providers: Readonly<Record<string, string>>;
  probeMs?: number;
  settings?: Partial<Settings>;
  role?: PageRole;
}): Promise<FleetRig> {
  const fleets = new Map(Object.entries(opts.providers).map(([n, base]) => [n, new Fleet(base)]));
  const providers = new ProviderSet();
  const applied = await providers.apply({
    installation: 'page-test',
    providers: [...fleets].map(([name, fleet]) => ({
      name,
      type: 'fleet',
      moduleType: 'fleet',
      entry: { module: fleetModule(fleet) },
      block: {},
    })),
  } as never);
  if (applied.problems.length > 0) throw new Error(applied.problems.join('\n'));
  const target = await startProbeTarget({ listen: '127.0.0.1:0', tlsListen: '127.0.0.1:0' });
  const store = new MemoryStore();
  const pools = new MemoryPoolStore(store);
  const page = await startStatusPage({
    listen: '127.0.0.1:0',
    role: () => opts.role ?? { store: 'memory', state: 'leading' },
    settings: { ...DEFAULTS, statusPushMs: 200 },
  });
  const operator = new Operator({
    store,
    pools,
    providers,
    page,
    probeTarget: target.target,
    settings: {
      gcIntervalMs: 0,
      healthIntervalMs: 1000,
      backoffBaseMs: 50,
      probeIntervalMs: opts.probeMs ?? 300,
      probeTimeoutMs: 3000,
      failureThreshold: 2,
      startupTimeoutMs: 2000,
      ...opts.settings,
    },
  });
  operator.start();
  return {
    store,
    operator,
    page,
    target,
    fleets,
    pools,
    applyPool(name, spec) {
      const [namespace, n] = name.includes('/') ? name.split('/') : ['default', name];
      const v = validatePoolSpec({
        template: {
          spec: { provider: [...fleets.keys()][0], allowedSources: ['127.0.0.0/8'] },
        },
        ...spec,
      });
      if (!v.ok) throw new Error(JSON.stringify(v.problems));
      pools.apply(namespace as string, n as string, v.value);
      return v.value;
    },
    apply(name, spec = {}) {
      const [namespace, n] = name.includes('/') ? name.split('/') : ['default', name];
      const v = validateProxySpec({
        provider: [...fleets.keys()][0],
        allowedSources: ['127.0.0.0/8'],
        ...spec,
      });
      if (!v.ok) throw new Error(JSON.stringify(v.problems));
      store.apply(namespace as string, n as string, v.value);
    },
    async close() {
      await page.close();
      await operator.stop();
      await providers.close();
      await target.close();
      for (const f of fleets.values()) await f.close();
    },
  };
}
