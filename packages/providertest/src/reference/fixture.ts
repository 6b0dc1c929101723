import {
  createProvider,
  formatMark,
  formatMarkTime,
  MarkKey,
  type Provider,
} from '@proxy-op/contract';
import type { BackendHarness, ConformanceFixture } from '../harness.js';
import type { ConformanceDeps } from '../telemetry.js';
import { BackendError, MemoryBackend } from './backend.js';
import type { Flaw } from './flaws.js';
import { memoryProviderModule } from './module.js';
import { classifyMemory, memoryId } from './provider.js';

/** The credential sentinel of the reference backend. */
export const MEMORY_CREDENTIAL_SENTINEL = 'tok-SENTINEL-7f3a9c-never-log-me';

/**
 * Builds the reference provider over a fresh in-memory backend, with its
 * harness: the factory to hand `describeProviderConformance`. `flaw` builds
 * one of the deliberately broken variants.
 */
export async function createReferenceFixture(
  deps: ConformanceDeps,
  opts: { flaw?: Flaw | undefined } = {},
): Promise<ConformanceFixture & { backend: MemoryBackend }> {
  const backend = new MemoryBackend({ token: 'accepted-token' });
  const zones = ['zone-a', 'zone-b', 'zone-c'];
  const provider: Provider = await createProvider(
    memoryProviderModule,
    'memory-a',
    { zones, machineTypes: ['small', 'large'], images: ['debian-13'] },
    { ...deps, backend, flaw: opts.flaw },
  );
  const name = (id: string) => memoryId.mustParse(id, 'harness', 'get').name;
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
    backendCalls: () => backend.calls.length,
    instanceCount: async () => backend.vms.size,
    setRunning: async (id, ip) => backend.update(name(id), { status: 'running', ip }),
    setState: async (id, state) => {
      const vm = backend.vms.get(name(id));
      if (vm === undefined) throw new Error(`no VM for ${id}`);
      const { ip: _ip, ...withoutIp } = vm;
      backend.plant(
        state === 'running' ? { ...vm, status: 'running' } : { ...withoutIp, status: state },
      );
    },
    rewriteMark: async (id, mark) => {
      const vm = backend.vms.get(name(id));
      if (vm === undefined) throw new Error(`no VM for ${id}`);
      backend.update(name(id), {
        metadata: {
          ...vm.metadata,
          [MarkKey.Uid]: mark.uid,
          [MarkKey.CreatedAt]: formatMarkTime(mark.createdAt),
        },
      });
    },
    holdLock: async (id) => {
      backend.update(name(id), { lock: 'backup' });
      return async () => backend.update(name(id), { lock: undefined });
    },
    holdNextDelete: (id) => backend.holdNextDelete(name(id)),
    plantNeverStarted: async (req) => {
      backend.plant({
        name: req.name,
        status: 'defined',
        metadata: formatMark({
          uid: req.uid,
          createdAt: new Date(),
          installation: req.installation ?? 'default',
        }),
        userDataBytes: req.cloudInit.byteLength,
      });
      return memoryId.format({ name: req.name });
    },
    plantUnmarked: async (vmName) => {
      backend.plant({
        name: vmName,
        status: 'running',
        ip: '10.9.9.9',
        metadata: {},
        userDataBytes: 0,
      });
    },
    plantMarked: async (vmName, mark) => {
      const metadata: Record<string, string> = {
        [MarkKey.Managed]: 'true',
        [MarkKey.Uid]: mark.uid,
        [MarkKey.CreatedAt]: formatMarkTime(new Date(Date.now() - 3_600_000)),
      };
      if (mark.installation !== undefined) metadata[MarkKey.Installation] = mark.installation;
      backend.plant({
        name: vmName,
        status: 'running',
        ip: '10.9.9.8',
        metadata,
        userDataBytes: 0,
      });
    },
    blockCalls: (skip) => backend.blockCalls(skip),
    classifyCases: [
      {
        name: 'VM does not exist',
        op: 'get',
        error: new BackendError('NO_SUCH_VM', 'VM x does not exist'),
        want: 'NotFound',
      },
      {
        name: 'VM vanished during create',
        op: 'create',
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
    classify: classifyMemory,
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
        name: 'the token is refused',
        arrange: () => backend.presentToken('wrong-token'),
        want: 'Unauthorized',
      },
    ],
    credentialSentinel: MEMORY_CREDENTIAL_SENTINEL,
    rejectCredential: () => backend.presentToken(MEMORY_CREDENTIAL_SENTINEL),
  };
  return { provider, harness, backend };
}
