// A provider written outside the proxy-op repo: "acme", whose backend is a simulated
// VM service (the kit's MemoryBackend stands in for the vendor's API here). It shows
// what a third-party author writes: the Provider, its classify, its harness.
import {
  abortedError,
  adoptionProblem,
  belongsTo,
  type CallOptions,
  type CreateRequest,
  checkCreateRequest,
  type ErrorClass,
  formatMark,
  formatMarkTime,
  type Instance,
  idFormat,
  type ListOptions,
  listInstallation,
  MarkKey,
  notFound,
  type Operation,
  observe,
  observeSeam,
  type Provider,
  ProviderError,
  parseMark,
  permanent,
  requireOneOf,
  type TargetResult,
  toProviderError,
  transient,
} from '@proxy-op/contract';
import type { BackendHarness, ConformanceDeps } from '@proxy-op/providertest';
import { BackendError, MemoryBackend, type MemorySeam } from '@proxy-op/providertest/reference';

const ID = idFormat(['acme', ':name'], { name: /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/ });

export function classifyAcme(_op: Operation, err: unknown): ErrorClass {
  if (ProviderError.isInstance(err)) return err.errorClass;
  if (!(err instanceof BackendError)) return 'Transient';
  if (err.status === 'NO_SUCH_VM') return 'NotFound';
  if (err.status === 'UNAUTHORIZED' || err.status === 'FORBIDDEN' || err.status === 'INVALID')
    return 'Permanent';
  return err.status === 'NO_CAPACITY' ? 'QuotaExceeded' : 'Transient';
}

class AcmeProvider implements Provider {
  readonly type = 'acme';
  private readonly busy = new Map<string, Promise<unknown>>();
  constructor(
    readonly name: string,
    private readonly seam: MemorySeam,
  ) {}

  // One operation per name at a time (a real provider would use @proxy-op/keyedlock).
  private async serial<T>(
    name: string,
    op: Operation,
    signal: AbortSignal | undefined,
    fn: () => Promise<T>,
  ) {
    while (this.busy.has(name)) {
      if (signal?.aborted) throw abortedError(this.name, op, signal);
      await Promise.race([this.busy.get(name), new Promise((r) => setTimeout(r, 5))]).catch(
        () => {},
      );
    }
    const p = fn();
    this.busy.set(name, p);
    try {
      return await p;
    } catch (err) {
      throw this.fail(op, err, signal);
    } finally {
      this.busy.delete(name);
    }
  }

  private fail(op: Operation, err: unknown, signal: AbortSignal | undefined): unknown {
    if (signal?.aborted && !ProviderError.isInstance(err))
      return abortedError(this.name, op, signal);
    const safe = err instanceof BackendError ? new Error(`acme answered ${err.status}`) : err;
    return toProviderError(this.name, op, safe, () => classifyAcme(op, err));
  }

  async create(req: CreateRequest, opts: CallOptions = {}): Promise<string> {
    const r = checkCreateRequest(this.name, req);
    requireOneOf(
      this.name,
      'placement.machineType',
      req.placement.machineType,
      ['small'],
      'acme.machineTypes',
    );
    requireOneOf(this.name, 'placement.image', req.placement.image, ['ubuntu'], 'acme.images');
    const signal = opts.signal;
    if (signal?.aborted) throw abortedError(this.name, 'create', signal);
    return this.serial(req.name, 'create', signal, async () => {
      const vm = await this.seam.lookup(req.name, signal);
      if (vm !== undefined) {
        const problem = adoptionProblem(parseMark(vm.metadata), r);
        if (problem) throw permanent(this.name, 'create', `${req.name} exists and ${problem}`);
        if (vm.status !== 'running') await this.seam.start(req.name, signal);
      } else {
        const mark = formatMark({
          uid: req.uid,
          createdAt: new Date(),
          installation: r.installation,
        });
        await this.seam.define(req.name, mark, req.cloudInit, signal);
        await this.seam.start(req.name, signal);
      }
      return ID.format({ name: req.name });
    });
  }

  async get(id: string, opts: CallOptions = {}): Promise<Instance> {
    const { name } = ID.mustParse(id, this.name, 'get');
    try {
      const vm = await this.seam.lookup(name, opts.signal);
      const mark = vm && parseMark(vm.metadata);
      if (!vm || !mark) throw notFound(this.name, 'get', `${name} is gone`);
      if (vm.lock) throw transient(this.name, 'get', `${name} is busy`);
      const state =
        vm.status === 'defined'
          ? 'Provisioning'
          : vm.status === 'running'
            ? vm.ip
              ? 'Running'
              : 'Provisioning'
            : vm.status === 'terminated'
              ? 'Terminated'
              : 'Stopped';
      return {
        id,
        uid: mark.uid,
        createdAt: mark.createdAt,
        state,
        ip: state === 'Running' ? vm.ip : undefined,
      };
    } catch (err) {
      throw this.fail('get', err, opts.signal);
    }
  }

  async delete(id: string, opts: CallOptions = {}): Promise<void> {
    const { name } = ID.mustParse(id, this.name, 'delete');
    const signal = opts.signal;
    if (signal?.aborted) throw abortedError(this.name, 'delete', signal);
    await this.serial(name, 'delete', signal, async () => {
      const vm = await this.seam.lookup(name, signal);
      if (!vm || !parseMark(vm.metadata)) return;
      if (vm.lock) throw transient(this.name, 'delete', `${name} is busy`);
      if (vm.status === 'running') await this.seam.stop(name, signal);
      await this.seam.destroy(name, signal);
    });
  }

  async listByTag(opts: ListOptions = {}): Promise<Instance[]> {
    const installation = listInstallation(this.name, opts);
    try {
      const vms = await this.seam.list(opts.signal);
      return vms.flatMap((vm) => {
        const mark = parseMark(vm.metadata);
        return mark && belongsTo(mark, installation)
          ? [{ id: ID.format({ name: vm.name }), uid: mark.uid, createdAt: mark.createdAt }]
          : [];
      });
    } catch (err) {
      throw this.fail('list', err, opts.signal);
    }
  }
}

export function createAcmeFixture(deps: ConformanceDeps) {
  const backend = new MemoryBackend({ token: 'acme-token' });
  const seam = observeSeam(backend.seam(), {
    prefix: 'acme',
    provider: 'acme-1',
    tracer: deps.tracer,
    logger: deps.logger,
  });
  const provider = observe(new AcmeProvider('acme-1', seam), deps);
  const vm = (id: string) => ID.mustParse(id, 'harness', 'get').name;
  const plant = (name: string, metadata: Record<string, string>) =>
    backend.plant({ name, status: 'running', ip: '10.1.1.1', metadata, userDataBytes: 0 });
  const sentinel = 'acme-SENTINEL-credential-4c2d';
  const harness: BackendHarness = {
    baseRequest: {
      namespace: 'default',
      port: 3128,
      placement: { machineType: 'small', image: 'ubuntu' },
    },
    invalidPlacements: [
      { placement: { machineType: 'huge', image: 'ubuntu' }, field: 'placement.machineType' },
    ],
    backendCalls: () => backend.calls.length,
    instanceCount: async () => backend.vms.size,
    setRunning: async (id, ip) => backend.update(vm(id), { status: 'running', ip }),
    setState: async (id, state) => backend.update(vm(id), { status: state, ip: undefined }),
    rewriteMark: async (id, m) =>
      backend.update(vm(id), {
        metadata: {
          ...backend.vms.get(vm(id))?.metadata,
          [MarkKey.Uid]: m.uid,
          [MarkKey.CreatedAt]: formatMarkTime(m.createdAt),
        },
      }),
    holdLock: async (id) => {
      backend.update(vm(id), { lock: 'snapshot' });
      return async () => backend.update(vm(id), { lock: undefined });
    },
    holdNextDelete: (id) => backend.holdNextDelete(vm(id)),
    plantNeverStarted: async (req) => {
      backend.plant({
        name: req.name,
        status: 'defined',
        metadata: formatMark({ uid: req.uid, createdAt: new Date(), installation: 'default' }),
        userDataBytes: 0,
      });
      return ID.format({ name: req.name });
    },
    plantUnmarked: async (name) => plant(name, {}),
    plantMarked: async (name, m) =>
      plant(name, {
        [MarkKey.Managed]: 'true',
        [MarkKey.Uid]: m.uid,
        ...(m.installation === undefined ? {} : { [MarkKey.Installation]: m.installation }),
      }),
    blockCalls: (skip) => backend.blockCalls(skip),
    classifyCases: [
      { name: 'gone', op: 'get', error: new BackendError('NO_SUCH_VM', 'gone'), want: 'NotFound' },
      { name: 'busy', op: 'get', error: new BackendError('LOCKED', 'busy'), want: 'Transient' },
      {
        name: 'denied',
        op: 'create',
        error: new BackendError('FORBIDDEN', 'no'),
        want: 'Permanent',
      },
    ],
    classify: classifyAcme,
    credentialSentinel: sentinel,
    rejectCredential: () => backend.presentToken(sentinel),
  };
  return { provider, harness };
}

export const acmeProfile = {
  readiness: 'immediate',
  createReturn: 'blocking',
  deleteReturn: 'waits',
  ipSource: 'assigned-at-create',
  gcMark: 'written-metadata',
  createdAt: 'written-at-create',
  listPartial: 'single-call',
  quota: 'absent',
  notFound: 'error-code',
  primaryKey: 'name-is-key',
  provisioningState: 'create-blocks',
  asyncOps: ['backend-lock'],
  secondaryResources: 'none',
  credentials: 'mounted-files',
  clientKind: 'thin-client',
  timeouts: 'signal-only',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'manual-runbook',
} as const;

export type { TargetResult };
