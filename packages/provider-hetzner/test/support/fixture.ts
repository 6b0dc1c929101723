// Test support (not a test file): the conformance harness of the `hetzner` provider. The provider
// runs as users build it (createProvider, the production adapter over undici, the token read
// from a file) against the Hetzner Cloud API double on 127.0.0.1; the harness acts on the double
// behind the provider's back.
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProvider, MarkKey, type Provider } from '@proxy-op/contract';
import type {
  BackendHarness,
  ConformanceDeps,
  ConformanceFixture,
  PlantedMark,
} from '@proxy-op/providertest';
import { classify } from '../../src/classify.js';
import { parseId, providerModule } from '../../src/index.js';
import { classifyCases } from './cases.js';
import {
  type HetznerDouble,
  type HetznerDoubleOptions,
  startHetznerDouble,
} from './double/double.js';
import type { ServerRec } from './double/store.js';

/** The credential sentinel: the token a refused credential carries. */
export const HETZNER_CREDENTIAL_SENTINEL = 'SENTINEL-hcloud-token-4e1b9c-never-log-me';

/** The per-call budget the conformance provider is built with. */
export const CALL_BUDGET_MS = 2000;

/** The double's timings for tests: a server runs within a few hundred ms, and is gone in 50. */
export const FAST = Object.freeze({ initializingMs: 150, startingMs: 150, deleteMs: 50 });

/** Options of {@link createHetznerFixture}. */
export interface HetznerFixtureOptions {
  readonly double?: HetznerDoubleOptions;
  /** Config fields over the fixture's. */
  readonly config?: Record<string, unknown>;
  /** The provider's name (default `hetzner-test`). */
  readonly name?: string;
}

/** The fixture plus the double, the token file and the config it runs with. */
export interface HetznerFixture extends ConformanceFixture {
  readonly double: HetznerDouble;
  readonly tokenFile: string;
  readonly config: Record<string, unknown>;
  /** Writes a token into the token file, as a rotated Secret would be. */
  writeToken(token: string): void;
}

let tokens = 0;

/** Builds a provider over a fresh double, with the conformance harness. */
export async function createHetznerFixture(
  deps: Partial<ConformanceDeps>,
  o: HetznerFixtureOptions = {},
): Promise<HetznerFixture> {
  const token = `hcloud-test-token-${++tokens}-${process.pid}`;
  const double = await startHetznerDouble({ tokens: [token], timings: FAST, ...o.double });
  const dir = mkdtempSync(join(tmpdir(), 'hetzner-fixture-'));
  const tokenFile = join(dir, 'token');
  const writeToken = (t: string) => writeFileSync(tokenFile, `${t}\n`, { mode: 0o600 });
  writeToken(token);
  const config: Record<string, unknown> = {
    tokenFile,
    locations: ['fsn1', 'nbg1'],
    serverTypes: ['cx23', 'cpx11'],
    images: { 'ubuntu-24.04': 'ubuntu-24.04', 'debian-12': 'debian-12' },
    firewall: { enabled: true, sourceRanges: ['198.51.100.0/24'] },
    endpoint: double.url,
    timeouts: { readMs: CALL_BUDGET_MS, writeMs: CALL_BUDGET_MS, pollMs: 20, deleteWaitMs: 10_000 },
    ...o.config,
  };
  const provider: Provider = await createProvider(
    providerModule,
    o.name ?? 'hetzner-test',
    config,
    deps,
  );
  const nameOf = (id: string) => {
    const parts = parseId(id);
    if (parts === undefined) throw new Error(`harness: not a hetzner provider ID: ${id}`);
    return parts.name;
  };
  /** The server of `id`, its pending transitions dropped (the harness decides its state now). */
  const pinned = (id: string): ServerRec => {
    const server = double.serverNamed(nameOf(id));
    if (server === undefined) throw new Error(`harness: no server for ${id}`);
    double.cancel(`server/${server.id}`);
    return server;
  };
  const labelsOf = (mark: PlantedMark): Record<string, string> => ({
    [MarkKey.Managed]: 'true',
    [MarkKey.Uid]: mark.uid,
    ...(mark.installation === undefined ? {} : { [MarkKey.Installation]: mark.installation }),
  });
  const harness: BackendHarness = {
    baseRequest: {
      namespace: 'default',
      port: 3128,
      placement: { region: 'fsn1', machineType: 'cx23', image: 'ubuntu-24.04' },
    },
    invalidPlacements: [
      {
        placement: { region: 'fsn1', machineType: 'cx99', image: 'ubuntu-24.04' },
        field: 'placement.machineType',
      },
      { placement: { region: 'fsn1', image: 'ubuntu-24.04' }, field: 'placement.machineType' },
      {
        placement: { region: 'fsn1', machineType: 'cx23', image: 'windows-2022' },
        field: 'placement.image',
      },
      { placement: { region: 'fsn1', machineType: 'cx23' }, field: 'placement.image' },
      {
        placement: { region: 'ash', machineType: 'cx23', image: 'ubuntu-24.04' },
        field: 'placement.region',
      },
      { placement: { machineType: 'cx23', image: 'ubuntu-24.04' }, field: 'placement.region' },
      {
        placement: { zone: 'ash-dc1', machineType: 'cx23', image: 'ubuntu-24.04' },
        field: 'placement.zone',
      },
      {
        placement: { zone: 'fsn1', machineType: 'cx23', image: 'ubuntu-24.04' },
        field: 'placement.zone',
      },
      {
        placement: {
          region: 'nbg1',
          zone: 'fsn1-dc14',
          machineType: 'cx23',
          image: 'ubuntu-24.04',
        },
        field: 'placement.region',
      },
    ],
    backendCalls: () => double.requests.length,
    instanceCount: async () => double.servers.size,
    secondaryCount: async () => double.secondaryCount(),
    setRunning: async (id, ip) => {
      const server = pinned(id);
      server.status = 'running';
      server.ipv4 = ip === undefined ? undefined : { id: double.nextId(), ip };
      server.ipv6 ??= double.nextAddresses().ipv6;
    },
    setState: async (id, state) => {
      const server = pinned(id);
      // `paused` is no status of the API: a state the provider has no mapping for.
      server.status = state === 'running' ? 'running' : state === 'stopped' ? 'off' : 'paused';
    },
    rewriteMark: async (id, mark) => {
      const server = pinned(id);
      server.labels = { ...server.labels, [MarkKey.Uid]: mark.uid };
    },
    replaceInstance: async (id, mark) => {
      const server = pinned(id);
      double.removeServer(server.id);
      double.plantServer(server.name, { labels: mark === undefined ? {} : labelsOf(mark) });
    },
    holdLock: async (id) => {
      const server = pinned(id);
      server.locked = true;
      return async () => {
        server.locked = false;
      };
    },
    holdNextDelete: (id) => double.holdNextDelete(nameOf(id)),
    plantNeverStarted: async (req) => {
      double.plantServer(req.name, {
        status: 'initializing',
        labels: labelsOf({ uid: req.uid, installation: req.installation ?? 'default' }),
      });
      return `servers/${req.name}`;
    },
    plantUnmarked: async (name) => {
      double.plantServer(name, {});
      return `servers/${name}`;
    },
    plantMarked: async (name, mark) => {
      double.plantServer(name, { labels: labelsOf(mark) });
      return `servers/${name}`;
    },
    blockCalls: (skip) => double.blockCalls(skip),
    injectMalformed: () => double.injectMalformed(),
    exhaustCapacity: () => {
      double.serverLimit = double.servers.size;
    },
    failNextCreateLater: () => {
      double.failNextCreateLater = true;
    },
    callBudgetMs: CALL_BUDGET_MS,
    classifyCases,
    classify,
    checkTargets: [new URL(double.url).host],
    checkScenarios: [
      { name: 'the project answers and the config fits', arrange: () => {}, want: 'Reachable' },
      {
        name: 'the token is refused',
        arrange: () => {
          double.tokens.clear();
        },
        want: 'Unauthorized',
      },
      {
        name: 'the token file is gone',
        arrange: () => unlinkSync(tokenFile),
        want: 'CredentialsUnavailable',
      },
      {
        name: 'the API is rate-limiting the project',
        arrange: () => double.refuseForRate(1000),
        want: 'RateLimited',
      },
      {
        name: 'a configured location does not exist',
        arrange: () => {
          double.locations.delete('nbg1');
        },
        want: 'LocationNotFound',
      },
      {
        name: 'a configured server type does not exist',
        arrange: () => {
          const i = double.serverTypes.findIndex((t) => t.name === 'cpx11');
          double.serverTypes.splice(i, 1);
        },
        want: 'ServerTypeNotFound',
      },
      {
        name: 'a server type is not offered in a configured location',
        arrange: () => {
          const t = double.serverTypes.find((x) => x.name === 'cx23');
          if (t !== undefined) t.locations = t.locations.filter((l) => l !== 'nbg1');
        },
        want: 'ServerTypeNotOffered',
      },
      {
        name: 'a catalogue image is withdrawn',
        arrange: () => {
          for (const i of double.images) if (i.name === 'debian-12') i.status = 'unavailable';
        },
        want: 'ImageNotFound',
      },
      {
        name: 'the endpoint refuses connections',
        arrange: () => double.close(),
        want: 'Unreachable',
      },
    ],
    credentialSentinel: HETZNER_CREDENTIAL_SENTINEL,
    rejectCredential: () => {
      double.echoCredential = true;
      writeToken(HETZNER_CREDENTIAL_SENTINEL);
    },
    rotateCredential: () => {
      const next = `hcloud-rotated-token-${++tokens}-${process.pid}`;
      double.tokens.clear();
      double.tokens.add(next);
      writeToken(next);
    },
    settle: async () => double.settle(),
  };
  return {
    provider,
    harness,
    double,
    tokenFile,
    config,
    writeToken,
    async cleanup() {
      await provider.close?.();
      await double.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
