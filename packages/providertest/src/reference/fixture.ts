/**
 * The reference provider's conformance fixture: the provider over a fresh
 * in-memory backend, with the harness that drives the backend for the
 * suite.
 *
 * @module
 */
import {
  createProvider,
  formatMark,
  formatMarkTime,
  MarkKey,
  type Provider,
  type ProviderModule,
} from '@proxy-op/contract';
import { plantedMarkPairs } from '../gate.js';
import type { BackendHarness, ConformanceFixture } from '../harness.js';
import type { ConformanceDeps } from '../telemetry.js';
import { BackendError, MemoryBackend } from './backend.js';
import { providerModule } from './module.js';
import {
  type MemoryConfig,
  type MemoryId,
  type MemoryProviderDeps,
  memoryId,
  seedVolume,
} from './provider.js';

/** The credential sentinel of the reference backend. */
export const MEMORY_CREDENTIAL_SENTINEL = 'tok-SENTINEL-7f3a9c-never-log-me';

const ACCEPTED_TOKEN = 'accepted-token-4d2c';

/** The harness's `authSettleMs`: the backend's proxies take a new file 20 ms after it is written. */
const AUTH_SETTLE_MS = 1_000;
/**
 * Where the credential checks go through the simulated proxy: a web server
 * on the machine's loopback, as a harness that sends real requests starts
 * one. The proxy's default policy refuses it.
 */
const CREDENTIAL_ORIGIN = '127.0.0.1:8080';

/** Options of {@link createReferenceFixture}. */
export interface ReferenceFixtureOptions {
  /**
   * The module to build the provider from instead of the reference one:
   * a variant of it (the kit's self-test builds broken ones this way).
   */
  readonly module?: ProviderModule<MemoryConfig, MemoryProviderDeps, MemoryId> | undefined;
}

/**
 * Builds the reference provider over a fresh in-memory backend, with its
 * harness: the factory to hand `describeProviderConformance`.
 */
export async function createReferenceFixture(
  deps: ConformanceDeps,
  opts: ReferenceFixtureOptions = {},
): Promise<ConformanceFixture & { backend: MemoryBackend }> {
  const backend = new MemoryBackend({ token: ACCEPTED_TOKEN });
  let credential = ACCEPTED_TOKEN;
  let rotations = 0;
  const zones = ['zone-a', 'zone-b', 'zone-c'];
  const module = opts.module ?? providerModule;
  const withZones = (configured: readonly string[]): Promise<Provider> =>
    createProvider(
      module,
      'memory-a',
      { zones: configured, machineTypes: ['small', 'large'], images: ['debian-13'] },
      { ...deps, backend, credential: () => credential },
    );
  const provider = await withZones(zones);
  const placed = (zone: string | undefined) => ({
    ...(zone === undefined ? {} : { zone }),
    machineType: 'small',
    image: 'debian-13',
  });
  const name = (id: string) => {
    const parts = memoryId.parse(id);
    if (parts === undefined) throw new Error(`harness: not a reference provider ID: ${id}`);
    return parts.name;
  };
  const existing = (id: string) => {
    const vm = backend.vms.get(name(id));
    if (vm === undefined) throw new Error(`harness: no VM for ${id}`);
    return vm;
  };
  const planted = (vmName: string, metadata: Record<string, string>) => {
    backend.plant({ name: vmName, status: 'running', ip: '10.9.9.8', metadata });
    return memoryId.format({ name: vmName });
  };
  const harness: BackendHarness = {
    baseRequest: {
      namespace: 'default',
      port: 3128,
      placement: { zone: 'zone-a', machineType: 'small', image: 'debian-13' },
    },
    invalidPlacements: [
      {
        placement: { zone: 'zone-a', machineType: 'huge', image: 'debian-13' },
        field: 'placement.machineType',
      },
      { placement: { zone: 'zone-a', image: 'debian-13' }, field: 'placement.machineType' },
      {
        placement: { zone: 'zone-a', machineType: 'small', image: 'windows' },
        field: 'placement.image',
      },
      {
        placement: { zone: 'mars', machineType: 'small', image: 'debian-13' },
        field: 'placement.zone',
      },
      { placement: { machineType: 'small', image: 'debian-13' }, field: 'placement.zone' },
    ],
    zoneConfigurations: [
      {
        zones,
        accepted: [placed('zone-b'), placed('zone-c')],
        refused: [
          { placement: placed(undefined), field: 'placement.zone' },
          { placement: placed(''), field: 'placement.zone' },
        ],
      },
      {
        // With one zone, a request may leave the zone out (or empty).
        zones: ['zone-b'],
        accepted: [placed(undefined), placed(''), placed('zone-b')],
        refused: [
          { placement: placed('zone-a'), field: 'placement.zone' },
          { placement: placed('mars'), field: 'placement.zone' },
        ],
      },
    ],
    withZones,
    backendCalls: () => backend.calls.length,
    instanceCount: async () => backend.vms.size,
    secondaryCount: async () => backend.seeds.size,
    setRunning: async (id, ip) => {
      existing(id);
      backend.update(name(id), { status: 'running', ip });
    },
    setState: async (id, state) => {
      // A stopped VM has no address; one in a state nobody expected may still report one.
      const { ip: _ip, ...withoutIp } = existing(id);
      backend.plant(
        state === 'stopped' ? { ...withoutIp, status: state } : { ...existing(id), status: state },
      );
    },
    rewriteMark: async (id, mark) => {
      const vm = existing(id);
      backend.update(name(id), {
        metadata: {
          ...vm.metadata,
          [MarkKey.Uid]: mark.uid,
          [MarkKey.CreatedAt]: formatMarkTime(mark.createdAt),
        },
      });
    },
    replaceInstance: async (id, mark) => {
      existing(id);
      planted(name(id), mark === undefined ? {} : plantedMarkPairs(mark));
    },
    holdLock: async (id) => {
      existing(id);
      backend.update(name(id), { lock: 'backup' });
      return async () => backend.update(name(id), { lock: undefined });
    },
    holdNextDelete: (id) => backend.holdNextDelete(name(id)),
    preempt: async (id) => {
      existing(id);
      backend.reclaim(name(id));
    },
    plantNeverStarted: async (req) => {
      backend.seeds.set(seedVolume(req.name), req.cloudInit.byteLength);
      backend.plant({
        name: req.name,
        status: 'defined',
        seed: seedVolume(req.name),
        metadata: formatMark({
          uid: req.uid,
          createdAt: new Date(),
          installation: req.installation ?? 'default',
        }),
      });
      return memoryId.format({ name: req.name });
    },
    plantUnmarked: async (vmName) => planted(vmName, {}),
    plantMarked: async (vmName, mark) => planted(vmName, plantedMarkPairs(mark)),
    blockCalls: (skip) => backend.blockCalls(skip),
    injectMalformed: () => backend.injectMalformed(),
    exhaustCapacity: () => backend.exhaustCapacity(),
    classifyCases: [
      {
        name: 'VM does not exist',
        op: 'get',
        error: new BackendError('NO_SUCH_VM', 'VM x does not exist'),
        want: 'NotFound',
      },
      {
        name: 'VM locked',
        op: 'delete',
        error: new BackendError('LOCKED', 'VM x is locked (backup)'),
        want: 'Transient',
      },
      {
        name: 'VM in the wrong state for the call (a race with another actor)',
        op: 'create',
        error: new BackendError('WRONG_STATE', 'VM x is already running'),
        want: 'Transient',
      },
      {
        name: 'VM exists (a define raced another)',
        op: 'create',
        error: new BackendError('VM_EXISTS', 'VM x already exists'),
        want: 'Transient',
      },
      {
        name: 'connection refused',
        op: 'list',
        error: new BackendError('UNREACHABLE', 'connect ECONNREFUSED'),
        want: 'Transient',
      },
      {
        name: 'token refused',
        op: 'get',
        error: new BackendError('UNAUTHORIZED', "invalid token 'x'"),
        want: 'Permanent',
      },
      {
        name: 'privilege missing',
        op: 'create',
        error: new BackendError('FORBIDDEN', 'VM.Allocate missing'),
        want: 'Permanent',
      },
      {
        name: 'bad parameter',
        op: 'create',
        error: new BackendError('INVALID', 'memory: not a number'),
        want: 'Permanent',
      },
      {
        name: 'out of capacity',
        op: 'create',
        error: new BackendError('NO_CAPACITY', 'pool full'),
        want: 'QuotaExceeded',
      },
      {
        name: 'an unexpected error',
        op: 'get',
        error: new Error('socket hang up'),
        want: 'Transient',
      },
    ],
    classify: (op, err) => module.classify(op, err),
    checkTargets: zones,
    delayTarget: (target, ms) => backend.delayTarget(target, ms),
    checkScenarios: [
      { name: 'every zone answers', arrange: () => {}, want: 'Reachable' },
      {
        name: 'zone-b refuses connections',
        arrange: () => backend.setUnreachable('zone-b'),
        want: 'Unreachable',
        target: 'zone-b',
      },
      {
        name: 'zone-a still answers while zone-b is down',
        arrange: () => backend.setUnreachable('zone-b'),
        want: 'Reachable',
        target: 'zone-a',
      },
      {
        name: 'the token lacks a privilege',
        arrange: () => backend.failPings('FORBIDDEN'),
        want: 'Forbidden',
      },
      {
        name: 'the backend answers something unexpected',
        arrange: () => backend.failPings('LOCKED'),
        want: 'APIError',
      },
      {
        name: 'the token is refused',
        arrange: () => {
          credential = 'wrong-token-0b1c';
        },
        want: 'Unauthorized',
      },
    ],
    credentialSentinel: MEMORY_CREDENTIAL_SENTINEL,
    rejectCredential: () => {
      credential = MEMORY_CREDENTIAL_SENTINEL;
    },
    rotateCredential: () => {
      credential = `${ACCEPTED_TOKEN}-rotated-${++rotations}`;
      backend.acceptToken(credential);
    },
    // The VM's simulated proxy asked for the origin, checked against its destination policy
    // and the password file it has loaded, as a request through a real proxy would be.
    credentialOrigin: () => CREDENTIAL_ORIGIN,
    acceptsCredential: async (id, c) => {
      const status = backend.proxyAnswer(name(id), c, CREDENTIAL_ORIGIN);
      if (status === 403) {
        throw new Error(
          `harness: the proxy of ${id} refused the destination ${CREDENTIAL_ORIGIN} (403): the Create did not pass its egress on`,
        );
      }
      return status === 200;
    },
    authSettleMs: AUTH_SETTLE_MS,
  };
  return { provider, harness, backend };
}
