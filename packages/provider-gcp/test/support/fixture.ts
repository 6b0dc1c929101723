// Test support (not a test file): the conformance harness of the `gcp` provider. The provider
// runs as users build it (createProvider, the real @google-cloud/compute over REST, a real
// google-auth-library OAuth2 client) against the Compute double on 127.0.0.1; the harness acts
// on the double behind the provider's back.
import { createProvider, MarkKey, type Provider } from '@proxy-op/contract';
import type {
  BackendHarness,
  ConformanceDeps,
  ConformanceFixture,
  PlantedMark,
} from '@proxy-op/providertest';
import { OAuth2Client } from 'google-auth-library';
import { classify } from '../../src/classify.js';
import { parseId } from '../../src/id.js';
import { CONFIG_DEFAULTS, providerModule } from '../../src/index.js';
import { classifyCases } from './cases.js';
import {
  type ComputeDouble,
  type ComputeDoubleOptions,
  quotaFailure,
  startComputeDouble,
} from './compute-double.js';

/** The credential sentinel: the token a refused credential carries. */
export const GCP_CREDENTIAL_SENTINEL = 'ya29.SENTINEL-4c9e1f-never-log-me';

/** The per-call budget the conformance provider is built with. */
export const CALL_BUDGET_MS = 3000;

/** An OAuth2 client that presents a fixed access token (no refresh), as a short-lived ADC token would. */
export function tokenClient(token: string): OAuth2Client {
  const c = new OAuth2Client();
  c.setCredentials({ access_token: token, expiry_date: Date.now() + 3_600_000 });
  return c;
}

/** Options of {@link createGcpFixture}. */
export interface GcpFixtureOptions {
  readonly double?: ComputeDoubleOptions;
  /** Config fields over the fixture's. */
  readonly config?: Record<string, unknown>;
  /** The provider's name (default `gcp-test`). */
  readonly name?: string;
}

/** The fixture plus the double it runs against. */
export interface GcpFixture extends ConformanceFixture {
  readonly double: ComputeDouble;
  readonly auth: OAuth2Client;
  readonly config: Record<string, unknown>;
}

let tokens = 0;

/** Builds a provider over a fresh double, with the conformance harness. */
export async function createGcpFixture(
  deps: Partial<ConformanceDeps>,
  o: GcpFixtureOptions = {},
): Promise<GcpFixture> {
  const token = `ya29.test-token-${++tokens}`;
  const double = await startComputeDouble({ tokens: [token], ...o.double });
  const auth = tokenClient(token);
  const config: Record<string, unknown> = {
    project: double.project,
    zones: ['us-central1-a', 'us-central1-b'],
    images: {
      'ubuntu-2404': CONFIG_DEFAULTS.images['ubuntu-2404'],
      'debian-12': 'projects/debian-cloud/global/images/family/debian-12',
    },
    firewall: { enabled: true, sourceRanges: ['203.0.113.0/24'] },
    endpoint: double.url,
    timeouts: { readMs: CALL_BUDGET_MS, writeMs: CALL_BUDGET_MS },
    ...o.config,
  };
  const provider: Provider = await createProvider(providerModule, o.name ?? 'gcp-test', config, {
    ...deps,
    auth,
  });
  const key = (id: string) => {
    const parts = parseId(id);
    if (parts === undefined) throw new Error(`harness: not a gcp provider ID: ${id}`);
    return `${parts.zone}/${parts.name}`;
  };
  const existing = (id: string) => {
    double.settleInstance(key(id));
    const inst = double.instances.get(key(id));
    if (inst === undefined) throw new Error(`harness: no instance for ${id}`);
    return inst as Record<string, unknown> & { labels?: Record<string, string> };
  };
  const labelsOf = (mark: PlantedMark): Record<string, string> => ({
    [MarkKey.Managed]: 'true',
    [MarkKey.Uid]: mark.uid,
    ...(mark.installation === undefined ? {} : { [MarkKey.Installation]: mark.installation }),
  });
  const zone = 'us-central1-a';
  const plant = (name: string, labels: Record<string, string>) => {
    double.plantInstance(zone, name, { status: 'RUNNING', labels, natIP: '198.51.100.7' });
    return `zones/${zone}/instances/${name}`;
  };
  const harness: BackendHarness = {
    baseRequest: {
      namespace: 'default',
      port: 3128,
      placement: { zone, machineType: 'e2-small', image: 'ubuntu-2404' },
    },
    invalidPlacements: [
      {
        placement: { zone, machineType: 'm9-huge', image: 'ubuntu-2404' },
        field: 'placement.machineType',
      },
      { placement: { zone, image: 'ubuntu-2404' }, field: 'placement.machineType' },
      {
        placement: { zone, machineType: 'e2-small', image: 'windows-2022' },
        field: 'placement.image',
      },
      { placement: { zone, machineType: 'e2-small' }, field: 'placement.image' },
      {
        placement: { zone: 'europe-west1-b', machineType: 'e2-small', image: 'ubuntu-2404' },
        field: 'placement.zone',
      },
      { placement: { machineType: 'e2-small', image: 'ubuntu-2404' }, field: 'placement.zone' },
      {
        placement: { region: 'asia-east1', machineType: 'e2-small', image: 'ubuntu-2404' },
        field: 'placement.region',
      },
      {
        placement: { region: 'europe-west1', zone, machineType: 'e2-small', image: 'ubuntu-2404' },
        field: 'placement.region',
      },
    ],
    backendCalls: () => double.requests.length,
    instanceCount: async () => double.instances.size + double.hidden.size,
    secondaryCount: async () => double.secondaryCount(),
    setRunning: async (id, ip) => {
      const inst = existing(id);
      inst.status = 'RUNNING';
      double.setNat(inst, ip);
    },
    setState: async (id, state) => {
      const inst = existing(id);
      if (state === 'running') inst.status = 'RUNNING';
      else {
        inst.status = state === 'stopped' ? 'STOPPED' : 'HIBERNATED';
        double.setNat(inst, undefined);
      }
    },
    // Compute Engine takes back Spot instances only: the conformance run configures Spot.
    preempt: async (id) => {
      existing(id);
      double.preempt(key(id));
    },
    rewriteMark: async (id, mark) => {
      const inst = existing(id);
      inst.labels = { ...(inst.labels ?? {}), [MarkKey.Uid]: mark.uid };
    },
    replaceInstance: async (id, mark) => {
      existing(id);
      const k = key(id);
      double.removeInstance(k);
      const [z, name] = k.split('/') as [string, string];
      double.plantInstance(z, name, {
        status: 'RUNNING',
        labels: mark === undefined ? {} : labelsOf(mark),
        natIP: '198.51.100.9',
      });
    },
    holdLock: async (id) => {
      existing(id);
      const finish = double.holdInsert(key(id));
      return async () => finish();
    },
    holdNextDelete: (id) => double.holdNextDelete(key(id)),
    plantNeverStarted: async (req) => {
      const z = req.placement.zone ?? zone;
      double.plantInstance(z, req.name, {
        status: 'STAGING',
        labels: {
          [MarkKey.Managed]: 'true',
          [MarkKey.Uid]: req.uid,
          [MarkKey.Installation]: req.installation ?? 'default',
        },
      });
      return `zones/${z}/instances/${req.name}`;
    },
    plantUnmarked: async (name) => plant(name, {}),
    plantMarked: async (name, mark) => plant(name, labelsOf(mark)),
    blockCalls: (skip) => double.blockCalls(skip),
    injectMalformed: () => double.injectMalformed(),
    exhaustCapacity: () => {
      double.insertFailure = {
        failure: quotaFailure('us-central1'),
        when: 'accept',
        times: Number.POSITIVE_INFINITY,
      };
    },
    failNextCreateLater: () => {
      double.insertFailure = { failure: quotaFailure('us-central1'), when: 'later', times: 1 };
    },
    isolatePart: async (id) => {
      const z = key(id).split('/')[0] as string;
      double.isolated.add(z);
      return async () => {
        double.isolated.delete(z);
      };
    },
    callBudgetMs: CALL_BUDGET_MS,
    classifyCases,
    classify,
    checkTargets: [double.project],
    checkScenarios: [
      { name: 'the project answers', arrange: () => {}, want: 'Reachable' },
      {
        name: 'the token is refused',
        arrange: () => {
          double.tokens.clear();
        },
        want: 'Unauthorized',
      },
      {
        name: 'instances.list is not granted',
        arrange: () => {
          double.denied.add('compute.instances.list');
        },
        want: 'Forbidden',
      },
      {
        name: 'the Compute API is off',
        arrange: () => {
          double.apiDisabled = true;
        },
        want: 'ApiNotEnabled',
      },
      {
        name: 'the endpoint refuses connections',
        arrange: () => double.close(),
        want: 'Unreachable',
      },
    ],
    credentialSentinel: GCP_CREDENTIAL_SENTINEL,
    rejectCredential: () => {
      double.echoCredential = true;
      auth.setCredentials({
        access_token: GCP_CREDENTIAL_SENTINEL,
        expiry_date: Date.now() + 3_600_000,
      });
    },
    settle: async () => double.settle(),
  };
  return {
    provider,
    harness,
    double,
    auth,
    config,
    async cleanup() {
      await provider.close?.();
      await double.close();
    },
  };
}
