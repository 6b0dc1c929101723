// Test support: a scripted provider module (a seam fake that injects every error class,
// slow calls, vanishing instances and state changes) and helpers to wire the operator.
import {
  type CheckContext,
  type CheckedCreateRequest,
  type CheckTarget,
  type DeleteContext,
  deletionProblem,
  type ErrorClass,
  type Instance,
  idFormat,
  type OperationContext,
  type Profile,
  type ProviderDeps,
  type ProviderImplementation,
  type ProviderModule,
  providerError,
  type State,
  type TargetResult,
} from '@proxy-op/contract';
import type { EgressPolicy } from '@proxy-op/egress';
import {
  MemoryBackend,
  profile as memoryProfile,
  providerModule as memoryProviderModule,
} from '@proxy-op/providertest/reference';
import { type ProxySpec, validateProxySpec } from '../src/api/proxy.js';
import { parseProvidersConfig } from '../src/providers/file.js';
import { type AnyProviderModule, ProviderRegistry } from '../src/providers/registry.js';
import { ProviderSet } from '../src/providers/set.js';
import { MemoryStore } from '../src/store/proxies.js';

/** One instance of the scripted backend. */
export interface ScriptedVm {
  name: string;
  uid: string;
  installation: string;
  state: State;
  ip?: string | undefined;
  createdAt: Date;
  deleting: boolean;
  cloudInit: string;
  port: number;
  /** The destination policy the Create asked for. */
  egress?: EgressPolicy | undefined;
}

type Op = 'create' | 'get' | 'delete' | 'list' | 'check';

/** A scripted backend shared by every provider built from {@link scriptedModule}. */
export class ScriptedBackend {
  readonly vms = new Map<string, ScriptedVm>();
  readonly calls: string[] = [];
  readonly failures: Array<{ op: Op; cls: ErrorClass; times: number }> = [];
  readonly delays = new Map<Op, number>();
  /** Calls of these operations wait until their signal aborts them. */
  readonly hangs = new Set<Op>();
  /** Instances come up Provisioning and need `boot` to be Running. */
  slowBoot = false;
  /** Deletes return at once and leave the instance until `settle`. */
  returnsEarly = false;
  checkResults: TargetResult[] = [
    {
      target: 'zone-a',
      address: 'scripted://a',
      ready: true,
      reason: 'Reachable',
      message: 'ok',
      details: {},
    },
  ];
  #ip = 10;
  now: () => Date = () => new Date();

  /** The next `times` calls of `op` fail with `cls`. */
  fail(op: Op, cls: ErrorClass, times = 1): void {
    this.failures.push({ op, cls, times });
  }
  boot(name: string): void {
    const vm = this.vms.get(name);
    if (vm) Object.assign(vm, { state: 'Running', ip: `10.1.0.${this.#ip++}` });
  }
  setState(name: string, state: State): void {
    const vm = this.vms.get(name);
    if (vm) {
      vm.state = state;
      if (state !== 'Running') vm.ip = undefined;
    }
  }
  vanish(name: string): void {
    this.vms.delete(name);
  }
  settle(): void {
    for (const [n, vm] of this.vms) if (vm.deleting) this.vms.delete(n);
  }
  live(): ScriptedVm[] {
    return [...this.vms.values()];
  }
  /** Names with a Create in flight, and how often a second Create for one arrived meanwhile. */
  readonly creating = new Set<string>();
  overlaps = 0;
  /** Calls in flight now, and the most seen at once. */
  inflight = 0;
  maxInflight = 0;
  async step(op: Op, provider: string, signal?: AbortSignal): Promise<void> {
    this.calls.push(op);
    if (this.hangs.has(op)) {
      await new Promise<never>((_resolve, reject) => {
        if (signal?.aborted) reject(signal.reason);
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    const d = this.delays.get(op);
    if (d !== undefined) {
      this.inflight++;
      this.maxInflight = Math.max(this.maxInflight, this.inflight);
      await new Promise((r) => setTimeout(r, d));
      this.inflight--;
    }
    const i = this.failures.findIndex((f) => f.op === op);
    const f = this.failures[i];
    if (f !== undefined) {
      f.times--;
      if (f.times <= 0) this.failures.splice(i, 1);
      throw providerError(f.cls, { provider, op, message: `scripted ${f.cls} on ${op}` });
    }
  }
}

const ids = idFormat(['scripted', ':name'], { name: /^[a-z0-9-]+$/ });

class ScriptedImplementation implements ProviderImplementation<{ name: string }> {
  readonly ids = ids;
  readonly checker = {
    targets: () => this.backend.checkResults.map((r) => ({ target: r.target, address: r.address })),
    check: async (t: CheckTarget, ctx: CheckContext) => {
      await this.backend.step('check', this.name, ctx.signal);
      const r = this.backend.checkResults.find((x) => x.target === t.target);
      Object.assign(ctx.details, r?.details ?? {});
      return { reason: r?.reason ?? 'APIError', message: r?.message ?? '', ready: r?.ready };
    },
  };
  constructor(
    readonly name: string,
    readonly backend: ScriptedBackend,
  ) {}
  lockKey(id: { name: string }): string {
    return id.name;
  }
  async create(req: CheckedCreateRequest): Promise<string> {
    if (this.backend.creating.has(req.name)) this.backend.overlaps++;
    this.backend.creating.add(req.name);
    try {
      await this.backend.step('create', this.name);
    } finally {
      this.backend.creating.delete(req.name);
    }
    const old = this.backend.vms.get(req.name);
    if (old !== undefined) {
      if (old.uid !== req.uid) {
        throw providerError('Permanent', {
          provider: this.name,
          op: 'create',
          message: 'foreign instance',
        });
      }
      return ids.format(req);
    }
    this.backend.vms.set(req.name, {
      name: req.name,
      uid: req.uid,
      installation: req.installation,
      state: this.backend.slowBoot ? 'Provisioning' : 'Running',
      ip: this.backend.slowBoot ? undefined : `10.0.0.${this.backend.vms.size + 10}`,
      createdAt: this.backend.now(),
      deleting: false,
      cloudInit: new TextDecoder().decode(req.cloudInit),
      port: req.port,
      egress: req.egress,
    });
    return ids.format(req);
  }
  async get(id: { name: string }): Promise<Instance> {
    await this.backend.step('get', this.name);
    const vm = this.backend.vms.get(id.name);
    if (vm === undefined)
      throw providerError('NotFound', { provider: this.name, op: 'get', message: 'gone' });
    return {
      id: ids.format(id),
      uid: vm.uid,
      state: vm.state,
      ip: vm.ip,
      createdAt: vm.createdAt,
      installation: vm.installation,
    };
  }
  async delete(id: { name: string }, ctx: DeleteContext): Promise<void> {
    await this.backend.step('delete', this.name);
    const vm = this.backend.vms.get(id.name);
    if (vm === undefined) return;
    const mark = { uid: vm.uid, installation: vm.installation, createdAt: vm.createdAt };
    if (deletionProblem(mark, ctx.owner) !== undefined) return;
    if (this.backend.returnsEarly) vm.deleting = true;
    else this.backend.vms.delete(id.name);
  }
  async list(installation: string, ctx: OperationContext): Promise<Instance[]> {
    await this.backend.step('list', this.name, ctx.signal);
    return this.backend
      .live()
      .filter((vm) => vm.installation === installation)
      .map((vm) => ({
        id: ids.format(vm),
        uid: vm.uid,
        createdAt: vm.createdAt,
        installation: vm.installation,
      }));
  }
}

/** A scripted provider module over `backend`; `returnsEarly` picks the delete-return profile. */
export function scriptedModule(backend: ScriptedBackend, returnsEarly = false): AnyProviderModule {
  const profile: Profile = {
    ...memoryProfile,
    // The scripted implementation has no updateAuth: its instances are replaced to change credentials.
    credentialRotation: 'replace',
    deleteReturn: returnsEarly ? 'returns-early' : 'waits',
    // A backend of one's own: not billed, never takes an instance back, no IPv6 ranges.
    billing: 'none',
    preemption: 'never',
    ipv6Egress: 'none',
  };
  backend.returnsEarly = returnsEarly;
  const mod: ProviderModule<Record<string, unknown>, ProviderDeps, { name: string }> = {
    type: 'scripted',
    profile,
    configSchema: {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: (v) => {
          if (v === undefined || v === null) return { value: {} };
          if (typeof v !== 'object') return { issues: [{ message: 'must be an object' }] };
          const o = v as Record<string, unknown>;
          if (o.zone !== undefined && typeof o.zone !== 'string') {
            return { issues: [{ message: 'must be a string', path: ['zone'] }] };
          }
          return { value: o };
        },
      },
    },
    classify: () => 'Transient',
    create: (name) => new ScriptedImplementation(name, backend),
  };
  return mod as AnyProviderModule;
}

/** A registry with the reference `memory` provider (each provider over its own backend) and `scripted`. */
export function testRegistry(
  opts: {
    scripted?: ScriptedBackend;
    returnsEarly?: boolean;
    memory?: Map<string, MemoryBackend>;
  } = {},
) {
  const registry = new ProviderRegistry();
  const backends = opts.memory ?? new Map<string, MemoryBackend>();
  registry.register(memoryProviderModule, (name) => {
    let b = backends.get(name);
    if (b === undefined) {
      b = new MemoryBackend({ token: 't' });
      backends.set(name, b);
    }
    return { backend: b, credential: () => 't' };
  });
  if (opts.scripted) registry.register(scriptedModule(opts.scripted, opts.returnsEarly ?? false));
  return { registry, backends };
}

/** Builds a ProviderSet from providers-file text. */
export async function providerSet(text: string, registry: ProviderRegistry): Promise<ProviderSet> {
  const load = await parseProvidersConfig(text, registry);
  if (!load.ok) throw new Error(load.problems.join('\n'));
  const set = new ProviderSet();
  const r = await set.apply(load.config);
  if (r.problems.length > 0) throw new Error(r.problems.join('\n'));
  return set;
}

/** A validated spec with defaults. */
export function spec(input: Record<string, unknown>): ProxySpec {
  const v = validateProxySpec({ allowedSources: ['10.0.0.0/8'], ...input });
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  return v.value;
}

/** A memory store. */
export function memoryStore(): MemoryStore {
  return new MemoryStore();
}

/** Settings that take the memory-store tests through their steps in milliseconds. */
export const FAST = {
  deletionPollMs: 2,
  provisioningPollMs: 2,
  readyResyncMs: 5,
  backoffBaseMs: 1,
  backoffMaxMs: 5,
  gcIntervalMs: 0,
  healthIntervalMs: 0,
};

/** Waits until `cond` holds, polling every 2 ms, for at most `ms`. */
export async function waitFor(cond: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 2));
  }
}
