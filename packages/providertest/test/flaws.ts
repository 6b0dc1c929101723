// Test support: deliberately broken variants of the reference provider, built from the test
// side (subclasses of its implementation, or wrappers around the provider the shell made), each
// with the checks it must fail. The published reference provider has no flaw switches.
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import {
  type CheckAnswer,
  type CheckContext,
  type CheckedCreateRequest,
  type CheckTarget,
  type DeleteContext,
  type ErrorClass,
  formatMark,
  type Instance,
  type Mark,
  type OperationContext,
  type Profile,
  type Provider,
  ProviderError,
  type ProviderModule,
  parseMark,
  requireOneOf,
  type ShellDeps,
  type State,
} from '@proxy-op/contract';
import type { BackendHarness } from '../src/index.js';
import type { MemoryBackend, MemorySeam, VmRecord } from '../src/reference/backend.js';
import { providerModule, profile as referenceProfile } from '../src/reference/module.js';
import {
  classify,
  type MemoryConfig,
  type MemoryId,
  MemoryImplementation,
  type MemoryProviderDeps,
  memoryId,
  seedVolume,
} from '../src/reference/provider.js';

/** The profiles the self-test runs the suite under. */
export const PROFILES = {
  /** The reference provider's own. */
  reference: referenceProfile,
  /** Looser promises the reference provider also keeps, selecting the checks its own profile leaves out. */
  loose: {
    ...referenceProfile,
    readiness: 'provisioning-window',
    deleteReturn: 'returns-early',
    ipSource: 'discovered',
    createdAt: 'backend-timestamp',
    provisioningState: 'native',
    billing: 'none',
    preemption: 'never',
  } satisfies Profile,
} as const;

export type ProfileName = keyof typeof PROFILES;

export type Deps = MemoryProviderDeps & ShellDeps;
export type Impl = new (name: string, config: MemoryConfig, deps: Deps) => MemoryImplementation;
export type Module = ProviderModule<MemoryConfig, MemoryProviderDeps, MemoryId>;

/** One deliberate defect and the checks it must fail. */
export interface Flaw {
  readonly about: string;
  /** A module variant to build the provider from. */
  readonly module?: Module;
  /** A wrapper around the provider `createProvider` made. */
  readonly wrap?: (provider: Provider, backend: MemoryBackend) => Provider;
  /** A change to the harness (one that lacks a hook, say). */
  readonly harness?: (harness: BackendHarness) => BackendHarness;
  /** The profiles it runs under (default: every one). */
  readonly profiles?: readonly ProfileName[];
  /** Test name → the failing check's message must match. */
  readonly fails: Readonly<Record<string, RegExp>>;
}

export function variant(Impl: Impl, overrides: Partial<Module> = {}): Module {
  return {
    ...providerModule,
    ...overrides,
    create: (name, config, deps) => new Impl(name, config, deps),
  };
}

/** A variant whose state mapping answers `map(vm)` where that is defined. */
export const mapsState = (map: (vm: VmRecord) => State | undefined) =>
  variant(
    class extends MemoryImplementation {
      protected override state(vm: VmRecord): State {
        return map(vm) ?? super.state(vm);
      }
    },
  );

/**
 * A variant whose Get answers `answer(instance, name, memory)` in place of the reference's
 * answer; each provider keeps its own memory (name → an IP seen before).
 */
const answersGet = (
  answer: (inst: Instance, name: string, memory: Map<string, string>) => Instance,
) =>
  variant(
    class extends MemoryImplementation {
      readonly #memory = new Map<string, string>();
      override async get(id: MemoryId, ctx: OperationContext): Promise<Instance> {
        return answer(await super.get(id, ctx), id.name, this.#memory);
      }
    },
  );

/**
 * A variant whose placement check is `check(req, ctx, base, zones)`: `base` is the
 * reference's check, `zones` the configured zones.
 */
const checksPlacement = (
  check: (
    req: CheckedCreateRequest,
    ctx: OperationContext,
    base: (req: CheckedCreateRequest) => void,
    zones: readonly string[],
  ) => void,
) =>
  variant(
    class extends MemoryImplementation {
      protected override checkPlacement(req: CheckedCreateRequest, ctx: OperationContext) {
        check(req, ctx, (r) => super.checkPlacement(r, ctx), this.config.zones);
      }
    },
  );

/** A variant whose mark reading goes through `read(vm, base)`. */
const readsMark = (
  read: (vm: VmRecord, base: (vm: VmRecord) => Mark | undefined) => Mark | undefined,
) =>
  variant(
    class extends MemoryImplementation {
      protected override readMark(vm: VmRecord): Mark | undefined {
        return read(vm, (v) => super.readMark(v));
      }
    },
  );

/** Seed, define and start a new VM the way the reference does, minus its safeguards. */
async function makeVm(
  seam: MemorySeam,
  req: CheckedCreateRequest,
  ctx: OperationContext,
  opts: { seed?: string; start?: boolean } = {},
): Promise<string> {
  const seed = opts.seed ?? seedVolume(req.name);
  const mark = formatMark({ uid: req.uid, createdAt: new Date(), installation: req.installation });
  await seam.putSeed(seed, req.cloudInit, ctx.signal);
  await seam.define(req.name, { metadata: mark, seed, zone: 'zone-a' }, ctx.signal);
  if (opts.start !== false) await seam.start(req.name, ctx.signal);
  return memoryId.format(req);
}

/** Wraps a seam so that every call goes through `around`. */
function wrapSeam(
  seam: MemorySeam,
  around: (
    method: string,
    args: unknown[],
    call: (args: unknown[]) => Promise<unknown>,
  ) => Promise<unknown>,
): MemorySeam {
  return new Proxy(seam, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) =>
        around(String(prop), args, (a) =>
          (v as (...x: unknown[]) => Promise<unknown>).apply(target, a),
        );
    },
  });
}

/** Drops the trailing AbortSignal of every seam call. */
const withoutSignals = (seam: MemorySeam) =>
  wrapSeam(seam, (_m, args, call) => call(args.filter((a) => !(a instanceof AbortSignal))));

export const label = (s: string) => new RegExp(`^${s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`);

export function wrapped(provider: Provider, patch: Partial<Provider>): Provider {
  return {
    name: provider.name,
    type: provider.type,
    create: (r, o) => provider.create(r, o),
    get: (i, o) => provider.get(i, o),
    delete: (i, o) => provider.delete(i, o),
    listByTag: (o) => provider.listByTag(o),
    ...(provider.check === undefined ? {} : { check: (o) => provider.check!(o) }),
    ...(provider.updateAuth === undefined
      ? {}
      : { updateAuth: (i, a, o) => provider.updateAuth!(i, a, o) }),
    ...patch,
  };
}

export const FLAWS: Record<string, Flaw> = {
  'repeat-create-duplicates': {
    about: 'a repeated Create makes a second instance',
    module: variant(
      class extends MemoryImplementation {
        #n = 0;
        override async create(req: CheckedCreateRequest, ctx: OperationContext) {
          const existing = await this.seam.lookup(req.name, ctx.signal);
          if (existing === undefined) return super.create(req, ctx);
          const dup = `${req.name.slice(0, 50)}-dup${++this.#n}`;
          await this.seam.putSeed(seedVolume(dup), req.cloudInit, ctx.signal);
          await this.seam.define(
            dup,
            { metadata: existing.metadata, seed: seedVolume(dup), zone: existing.zone ?? 'zone-a' },
            ctx.signal,
          );
          return memoryId.format({ name: req.name });
        }
      },
    ),
    fails: {
      'repeat Create returns the same ID and creates nothing': label('instances after the repeat'),
    },
  },
  'repeat-create-new-seed': {
    about: 'a repeated Create uploads its seed under a new name each time',
    module: variant(
      class extends MemoryImplementation {
        #n = 0;
        protected override async adopt(
          vm: VmRecord,
          req: CheckedCreateRequest,
          ctx: OperationContext,
        ) {
          await this.seam.putSeed(`${req.name}-seed-${++this.#n}`, req.cloudInit, ctx.signal);
          await super.adopt(vm, req, ctx);
        }
      },
    ),
    fails: {
      'repeat Create returns the same ID and creates nothing': label(
        'secondary resources after the repeat',
      ),
    },
  },
  'ids-need-two-characters': {
    about: 'parses only names of two characters or more, though a name may have one',
    module: variant(
      class extends MemoryImplementation {
        override readonly ids = {
          shape: memoryId.shape,
          parse: (id: string) => {
            const m = /^vms\/([a-z0-9][-a-z0-9]{0,61}[a-z0-9])$/.exec(id);
            return m === null ? undefined : { name: m[1] as string };
          },
        };
      },
    ),
    fails: {
      'the shortest and the longest names work end to end': /^the UID of the instance named \w:/,
    },
  },
  'unlocked-delete': {
    about: 'lets a Delete run beside a Create of the same instance',
    module: variant(
      class extends MemoryImplementation {
        #n = 0;
        override lockKey(id: MemoryId): string {
          return `${id.name}#${++this.#n}`;
        }
      },
    ),
    fails: {
      // The Delete runs between the Create's calls: it removes the seed the Create needs, or
      // the instance survives the Delete.
      'two Creates of one request make one instance, and a Delete waits for them':
        /^the first Create|after delete: expected NotFound/,
    },
  },
  'placement-checked-late': {
    about: 'calls the backend before checking placement',
    module: variant(
      class extends MemoryImplementation {
        override async create(req: CheckedCreateRequest, ctx: OperationContext) {
          await this.seam.lookup(req.name, ctx.signal);
          return super.create(req, ctx);
        }
      },
    ),
    fails: { 'Create checks placement before any backend call': label('backend calls for') },
  },
  'placement-names-config-key': {
    about: 'names the config key instead of the request field in a placement refusal',
    module: checksPlacement((req, ctx, base) => {
      try {
        base(req);
      } catch (err) {
        throw ctx.permanent(String((err as Error).message).replace(/placement\./g, ''));
      }
    }),
    fails: {
      'Create checks placement before any backend call': /^the refusal of .* names placement\./,
    },
  },
  'zone-required-with-one-zone': {
    about: 'requires placement.zone even when only one zone is configured',
    module: checksPlacement((req, ctx, base, zones) => {
      requireOneOf(ctx.provider, 'placement.zone', req.placement.zone, zones, 'memory.zones');
      base(req);
    }),
    fails: {
      'placement follows the zones the provider is configured with': label(
        'Create of {"machineType":"small","image":"debian-13"} with the zones ["zone-b"]',
      ),
    },
  },
  'zone-unchecked-with-one-zone': {
    about: 'takes any placement.zone when only one zone is configured',
    module: checksPlacement((req, _ctx, base, zones) => {
      const { zone: _zone, ...rest } = req.placement;
      base(zones.length === 1 ? { ...req, placement: rest } : req);
    }),
    fails: {
      'placement follows the zones the provider is configured with': /^expected a rejection/,
    },
  },
  'only-first-zone': {
    about: 'takes only the first configured zone',
    module: checksPlacement((req, ctx, base, [first]) => {
      base(req);
      const zone = req.placement.zone;
      if (zone !== undefined && zone !== '' && zone !== first) {
        throw ctx.permanent(`placement.zone "${zone}" is not ${first}`);
      }
    }),
    fails: {
      'placement follows the zones the provider is configured with': label(
        'Create of {"zone":"zone-b","machineType":"small","image":"debian-13"} with the zones ["zone-a","zone-b","zone-c"]',
      ),
    },
  },
  'create-returns-before-start': {
    about: 'returns from a blocking Create before the instance was started',
    module: variant(
      class extends MemoryImplementation {
        override async create(req: CheckedCreateRequest, ctx: OperationContext) {
          this.checkPlacement(req, ctx);
          const existing = await this.seam.lookup(req.name, ctx.signal);
          if (existing !== undefined) return memoryId.format(req);
          return makeVm(this.seam, req, ctx, { start: false });
        }
      },
    ),
    profiles: ['reference'],
    fails: {
      'Get right after Create answers with the instance': label(
        'an immediate-readiness instance right after Create',
      ),
    },
  },
  'renames-after-delete': {
    about: 'gives a request a new ID after its instance was deleted once',
    module: variant(
      class extends MemoryImplementation {
        readonly #seen = new Set<string>();
        override async create(req: CheckedCreateRequest, ctx: OperationContext) {
          const again =
            this.#seen.has(req.uid) && (await this.seam.lookup(req.name, ctx.signal)) === undefined;
          this.#seen.add(req.uid);
          return super.create(again ? { ...req, name: `${req.name.slice(0, 58)}-r` } : req, ctx);
        }
      },
    ),
    fails: {
      'the same request gets the same ID after Delete': label(
        'the ID of the same request after Delete',
      ),
    },
  },
  'created-at-epoch': {
    about: 'writes epoch 0 as the creation time',
    module: variant(
      class extends MemoryImplementation {
        constructor(name: string, config: MemoryConfig, deps: Deps) {
          super(name, config, { ...deps, clock: { now: () => new Date(0) } });
        }
      },
    ),
    fails: { 'CreatedAt is when Create ran': /^CreatedAt \(\S+\) is not before Create/ },
  },
  'quota-as-transient': {
    about: 'classifies running out of capacity as Transient',
    module: variant(MemoryImplementation, {
      classify: (op, err): ErrorClass => {
        const c = classify(op, err);
        return c === 'QuotaExceeded' ? 'Transient' : c;
      },
    }),
    fails: {
      'Create without capacity is QuotaExceeded and creates nothing': label(
        'class of a Create without capacity',
      ),
      'the classify table': /^classify: out of capacity/,
    },
  },
  'leaks-seed-on-refusal': {
    about: 'leaves the seed behind when the backend refuses the instance',
    module: variant(
      class extends MemoryImplementation {
        override async create(req: CheckedCreateRequest, ctx: OperationContext) {
          this.checkPlacement(req, ctx);
          const existing = await this.seam.lookup(req.name, ctx.signal);
          if (existing !== undefined) return super.create(req, ctx);
          return makeVm(this.seam, req, ctx);
        }
      },
    ),
    fails: {
      'Create without capacity is QuotaExceeded and creates nothing': label(
        'secondary resources after a Create without capacity',
      ),
    },
  },
  'never-started-is-stopped': {
    about: 'reports a created but never started instance as Stopped',
    module: mapsState((vm) => (vm.status === 'defined' ? 'Stopped' : undefined)),
    fails: {
      'a never-started instance is never Stopped': label('the state of a never-started instance'),
    },
  },
  'never-started-is-terminated': {
    about: 'reports a never started instance as Terminated, not Provisioning',
    module: mapsState((vm) => (vm.status === 'defined' ? 'Terminated' : undefined)),
    profiles: ['loose'],
    fails: {
      'a never-started instance is never Stopped': label(
        'the state of a never-started instance (native provisioning)',
      ),
    },
  },
  'logs-cloud-init': {
    about: 'logs the cloud-init text',
    module: variant(
      class extends MemoryImplementation {
        override async create(req: CheckedCreateRequest, ctx: OperationContext) {
          this.log.trace({ cloudInit: new TextDecoder().decode(req.cloudInit) }, 'memory create');
          return super.create(req, ctx);
        }
      },
    ),
    fails: { 'cloud-init never reaches logs, spans or errors': label('cloud-init in the logs') },
  },
  'logs-cloud-init-base64': {
    about: 'logs the cloud-init base64-encoded',
    module: variant(
      class extends MemoryImplementation {
        override async create(req: CheckedCreateRequest, ctx: OperationContext) {
          this.log.trace(
            { userData: Buffer.from(req.cloudInit).toString('base64') },
            'memory create',
          );
          return super.create(req, ctx);
        }
      },
    ),
    fails: { 'cloud-init never reaches logs, spans or errors': label('cloud-init in the logs') },
  },
  'cloud-init-in-error': {
    about: 'puts the cloud-init into the refusal of a foreign instance',
    module: variant(
      class extends MemoryImplementation {
        protected override async adopt(
          vm: VmRecord,
          req: CheckedCreateRequest,
          ctx: OperationContext,
        ) {
          try {
            await super.adopt(vm, req, ctx);
          } catch (err) {
            throw ctx.permanent(
              `${(err as Error).message} (user data: ${new TextDecoder().decode(req.cloudInit)})`,
            );
          }
        }
      },
    ),
    fails: { 'cloud-init never reaches logs, spans or errors': label('cloud-init in an error') },
  },
  'delete-keeps-vm': {
    about: 'stops the instance on Delete but never destroys it',
    module: variant(
      class extends MemoryImplementation {
        override async delete(id: MemoryId, ctx: DeleteContext) {
          const vm = await this.seam.lookup(id.name, ctx.signal);
          if (vm?.status === 'running') await this.seam.stop(id.name, ctx.signal);
          await this.seam.deleteSeed(seedVolume(id.name), ctx.signal);
        }
      },
    ),
    fails: {
      'Get after Delete is NotFound': /after delete: expected NotFound/,
      'nothing Create made is left once Delete is done':
        /after delete: expected NotFound|^instances once Delete is done/,
    },
  },
  'delete-leaves-seed': {
    about: 'leaves the seed volume behind on Delete',
    module: variant(
      class extends MemoryImplementation {
        override async delete(id: MemoryId, ctx: DeleteContext) {
          const vm = await this.seam.lookup(id.name, ctx.signal);
          if (vm === undefined || parseMark(vm.metadata) === undefined) return;
          if (vm.status === 'running') await this.seam.stop(id.name, ctx.signal);
          await this.seam.destroy(id.name, ctx.signal);
        }
      },
    ),
    fails: {
      'nothing Create made is left once Delete is done': label(
        'secondary resources once Delete is done',
      ),
      'Create cancelled at each of its backend calls, then retried, leaves exactly one instance':
        /^secondary resources left after cancelling at call 1/,
    },
  },
  'lax-id-parsing': {
    about: 'accepts malformed provider IDs',
    module: variant(
      class extends MemoryImplementation {
        override readonly ids = {
          shape: memoryId.shape,
          parse: (id: string) => ({ name: id.split('/').pop() ?? '' }),
        };
      },
    ),
    fails: { 'malformed IDs are Permanent from Get and Delete': /^get\(/ },
  },
  'unknown-state-not-stopped': {
    about: 'maps an unknown backend state to Provisioning',
    module: mapsState((vm) => (vm.status === 'unknown' ? 'Provisioning' : undefined)),
    fails: {
      'an unknown backend state maps to Stopped': label('the state of an unknown backend state'),
    },
  },
  'running-without-ip': {
    about: 'reports Running without an IP',
    module: mapsState((vm) => (vm.status === 'running' ? 'Running' : undefined)),
    fails: {
      'Running requires an IP': label('the state of a running instance without an address'),
    },
  },
  'running-without-ip-is-stopped': {
    about: 'reports a running instance whose address is not known yet as Stopped',
    module: mapsState((vm) =>
      vm.status === 'running' && vm.ip === undefined ? 'Stopped' : undefined,
    ),
    fails: {
      'a running instance without an address is Provisioning, never Running': label(
        'the state of a running instance without an address yet',
      ),
    },
  },
  'keeps-lost-address': {
    about: 'keeps answering Running with the last address it saw once the backend has none',
    module: answersGet((inst, name, last) => {
      if (inst.ip !== undefined) last.set(name, inst.ip);
      const ip = last.get(name);
      return inst.state !== 'Provisioning' || ip === undefined
        ? inst
        : { ...inst, state: 'Running', ip };
    }),
    fails: {
      'a running instance without an address is Provisioning, never Running': label(
        'the state of a running instance whose address is gone',
      ),
    },
  },
  'running-never-running': {
    about: 'keeps reporting Provisioning once the instance runs with an address',
    module: answersGet((inst, name, first) => {
      if (inst.ip === undefined || first.get(name) === inst.ip) return inst;
      if (!first.has(name)) first.set(name, inst.ip);
      return { ...inst, state: 'Provisioning', ip: undefined };
    }),
    profiles: ['loose'],
    fails: {
      'Get right after Create answers with the instance': label(
        'the state once the instance runs with an address',
      ),
    },
  },
  'caches-ip': {
    about: 'answers the first IP it saw, not the current one',
    module: answersGet((inst, name, ips) => {
      if (inst.ip === undefined) return inst;
      if (!ips.has(name)) ips.set(name, inst.ip);
      return { ...inst, ip: ips.get(name) };
    }),
    fails: { 'Get reads an IP that changed after Running': label('the IP after it changed') },
  },
  'reads-mark-from-memory': {
    about: 'answers UID and creation time from memory, not the backend',
    module: (() => {
      const marks = new Map<string, Mark>();
      return readsMark((vm, base) => {
        if (!marks.has(vm.name)) {
          const mark = base(vm);
          if (mark !== undefined) marks.set(vm.name, mark);
        }
        return marks.get(vm.name);
      });
    })(),
    fails: {
      'UID and CreatedAt are read back from the backend': label(
        'the UID after the mark was rewritten',
      ),
    },
  },
  'get-ignores-mark': {
    about: 'answers an instance without a mark as if it were ours',
    module: readsMark(
      (vm, base) => base(vm) ?? { uid: '', createdAt: new Date(0), installation: 'default' },
    ),
    fails: {
      'Get of an ID whose instance is no longer ours': label(
        'Get of an ID whose instance carries no mark',
      ),
      'ListByTag excludes unmarked instances and includes an empty UID': label(
        'the listing leaves out the unmarked instance',
      ),
    },
  },
  'not-found-while-locked': {
    about: 'answers NotFound while the instance is locked',
    module: variant(
      class extends MemoryImplementation {
        override async get(id: MemoryId, ctx: OperationContext): Promise<Instance> {
          const vm = await this.seam.lookup(id.name, ctx.signal);
          if (vm?.lock !== undefined) throw ctx.notFound(`instance ${id.name} is locked`);
          return super.get(id, ctx);
        }
      },
    ),
    fails: {
      'Get during a backend lock or async operation is Transient, never NotFound':
        label('Get while locked'),
    },
  },
  'not-found-during-delete': {
    about: 'answers NotFound while a Delete is in progress',
    module: variant(
      class extends MemoryImplementation {
        readonly #deleting = new Set<string>();
        override async get(id: MemoryId, ctx: OperationContext): Promise<Instance> {
          if (this.#deleting.has(id.name))
            throw ctx.notFound(`instance ${id.name} is being deleted`);
          return super.get(id, ctx);
        }
        override async delete(id: MemoryId, ctx: DeleteContext) {
          this.#deleting.add(id.name);
          try {
            await super.delete(id, ctx);
          } finally {
            this.#deleting.delete(id.name);
          }
        }
      },
    ),
    fails: {
      'Get during an in-progress Delete still returns the instance': label('Get during the Delete'),
    },
  },
  'delete-not-idempotent': {
    about: 'answers NotFound when deleting what is gone',
    module: variant(
      class extends MemoryImplementation {
        override async delete(id: MemoryId, ctx: DeleteContext) {
          if ((await this.seam.lookup(id.name, ctx.signal)) === undefined) {
            throw ctx.notFound(`instance ${id.name} does not exist`);
          }
          await super.delete(id, ctx);
        }
      },
    ),
    fails: { 'Delete twice succeeds': label('the second Delete') },
  },
  'deletes-unmarked': {
    about: 'deletes whatever instance has the name, marked or not',
    module: variant(
      class extends MemoryImplementation {
        override async delete(id: MemoryId, ctx: DeleteContext) {
          const vm = await this.seam.lookup(id.name, ctx.signal);
          if (vm !== undefined && this.readMark(vm) === undefined) {
            if (vm.status === 'running') await this.seam.stop(id.name, ctx.signal);
            await this.seam.destroy(id.name, ctx.signal);
            return;
          }
          await super.delete(id, ctx);
        }
      },
    ),
    fails: {
      'Delete leaves alone an instance at the ID that carries no mark': label(
        'instances after deleting an unmarked one',
      ),
    },
  },
  'delete-ignores-owner': {
    about: 'deletes a marked instance whatever owner the caller names',
    module: variant(
      class extends MemoryImplementation {
        override async delete(id: MemoryId, ctx: DeleteContext) {
          await super.delete(id, { ...ctx, owner: {} });
        }
      },
    ),
    fails: {
      'Delete leaves alone an instance of another owner': label(
        'the instance after a Delete naming another UID',
      ),
    },
  },
  'list-duplicates': {
    about: 'lists every instance twice',
    module: variant(
      class extends MemoryImplementation {
        override async list(installation: string, ctx: OperationContext) {
          const once = await super.list(installation, ctx);
          return [...once, ...once];
        }
      },
    ),
    fails: {
      'ListByTag returns created instances with ID, UID and CreatedAt': / is listed once/,
      'ListByTag excludes unmarked instances and includes an empty UID': label(
        'every instance listed once',
      ),
    },
  },
  'list-drops-empty-uid': {
    about: 'leaves marked instances with an empty UID out of the list',
    module: variant(
      class extends MemoryImplementation {
        override async list(installation: string, ctx: OperationContext) {
          return (await super.list(installation, ctx)).filter((i) => i.uid !== '');
        }
      },
    ),
    fails: {
      'ListByTag excludes unmarked instances and includes an empty UID': label(
        'the listing holds the marked instance with an empty UID',
      ),
    },
  },
  'lists-other-installations': {
    about: "lists other installations' instances",
    module: variant(
      class extends MemoryImplementation {
        override async list(_installation: string, ctx: OperationContext) {
          const all: Instance[] = [];
          for (const inst of ['default', 'inst-a', 'inst-b', 'other-installation']) {
            all.push(...(await super.list(inst, ctx)));
          }
          return all;
        }
      },
    ),
    fails: {
      'the installation mark keeps two installations apart': label("installation a leaves out b's"),
    },
  },
  'legacy-mark-not-default': {
    about: 'ignores marks written without an installation key',
    module: readsMark((vm, base) =>
      vm.metadata['proxy-operator-installation'] === undefined ? undefined : base(vm),
    ),
    fails: {
      'the installation mark keeps two installations apart': label(
        'a mark without installation belongs to the default',
      ),
    },
  },
  'adopts-foreign-instances': {
    about: 'adopts an instance with another UID, no mark or another installation',
    module: readsMark((vm, base) => ({
      ...(base(vm) ?? { createdAt: new Date(0) }),
      uid: '',
      installation: 'default',
    })),
    fails: {
      'Create refuses an instance with another UID': label(
        'class of the refusal of an instance with another UID',
      ),
      'Create refuses an unmarked instance with the same name': label(
        'class of the refusal of an unmarked instance',
      ),
      "Create refuses another installation's instance": label(
        "class of the refusal of another installation's instance",
      ),
    },
  },
  'seed-before-adoption-check': {
    about: 'uploads its seed before it checks whose instance has the name',
    module: variant(
      class extends MemoryImplementation {
        protected override async adopt(
          vm: VmRecord,
          req: CheckedCreateRequest,
          ctx: OperationContext,
        ) {
          await this.seam.putSeed(`${req.name}-seed`, req.cloudInit, ctx.signal);
          await super.adopt(vm, req, ctx);
        }
      },
    ),
    fails: {
      'Create refuses an instance with another UID': /^secondary resources after refusing/,
      'Create refuses an unmarked instance with the same name':
        /^secondary resources after refusing/,
      "Create refuses another installation's instance": /^secondary resources after refusing/,
    },
  },
  'refusal-without-name': {
    about: 'refuses a foreign instance without saying which',
    module: variant(
      class extends MemoryImplementation {
        protected override async adopt(
          vm: VmRecord,
          req: CheckedCreateRequest,
          ctx: OperationContext,
        ) {
          try {
            await super.adopt(vm, req, ctx);
          } catch {
            throw ctx.permanent('an instance with that name belongs to someone else');
          }
        }
      },
    ),
    fails: {
      'Create refuses an instance with another UID': label('the refusal names the instance'),
    },
  },
  'refuses-empty-uid': {
    about: 'refuses our own instance when its mark has an empty UID',
    module: variant(
      class extends MemoryImplementation {
        protected override async adopt(
          vm: VmRecord,
          req: CheckedCreateRequest,
          ctx: OperationContext,
        ) {
          if (this.readMark(vm)?.uid !== req.uid)
            throw ctx.permanent(`${req.name} has another UID`);
          await super.adopt(vm, req, ctx);
        }
      },
    ),
    fails: {
      'Create adopts our instance with an empty UID': label(
        'Create of our instance with an empty UID',
      ),
    },
  },
  'ignores-signal': {
    about: 'never passes the signal to the backend',
    module: variant(
      class extends MemoryImplementation {
        protected override decorate(seam: MemorySeam, deps: Deps) {
          return super.decorate(withoutSignals(seam), deps);
        }
      },
    ),
    fails: {
      'a cancelled signal returns promptly from create': /^create settled within/,
      'a cancelled signal returns promptly from get': /^get settled within/,
      'a cancelled signal returns promptly from delete': /^delete settled within/,
      'a cancelled signal returns promptly from listByTag': /^listByTag settled within/,
      'a cancelled signal returns promptly from delete mid-operation': /^delete settled within/,
      'Create cancelled at each of its backend calls, then retried, leaves exactly one instance':
        /^Create cancelled at backend call 1 settled promptly/,
      'cancelling one call leaves another in flight unharmed': label('the cancelled call settles'),
    },
  },
  'calls-before-signal-check': {
    about: 'makes a backend call before it looks at the signal',
    wrap: (p, backend) => {
      const seam = backend.seam(() => backend.token);
      const first =
        <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
        async (...a: A) => {
          await seam.list();
          return fn(...a);
        };
      return wrapped(p, {
        create: first((r, o) => p.create(r, o)),
        get: first((i, o) => p.get(i, o)),
        delete: first((i, o) => p.delete(i, o)),
        listByTag: first((o) => p.listByTag(o)),
      });
    },
    fails: Object.fromEntries(
      ['create', 'get', 'delete', 'listByTag'].map((m) => [
        `a cancelled signal returns promptly from ${m}`,
        label(`backend calls of ${m} with an already-fired signal`),
      ]),
    ),
  },
  'no-lookup-on-retry': {
    about: 'never looks for what an earlier attempt left, so a retry collides with it',
    module: variant(
      class extends MemoryImplementation {
        override async create(req: CheckedCreateRequest, ctx: OperationContext) {
          const existing = await this.seam.lookup(req.name, ctx.signal);
          if (existing?.status === 'running') return memoryId.format(req);
          this.checkPlacement(req, ctx);
          return makeVm(this.seam, req, ctx);
        }
      },
    ),
    fails: {
      'Create cancelled at each of its backend calls, then retried, leaves exactly one instance':
        /^the retry after cancelling at call 3/,
    },
  },
  'seed-per-attempt': {
    about: 'names the seed after the attempt, so every cancelled attempt leaves one',
    module: variant(
      class extends MemoryImplementation {
        #n = 0;
        override async create(req: CheckedCreateRequest, ctx: OperationContext) {
          this.checkPlacement(req, ctx);
          const existing = await this.seam.lookup(req.name, ctx.signal);
          if (existing !== undefined) return super.create(req, ctx);
          return makeVm(this.seam, req, ctx, { seed: `${req.name}-seed-${++this.#n}` });
        }
      },
    ),
    fails: {
      'Create cancelled at each of its backend calls, then retried, leaves exactly one instance':
        /^secondary resources left after cancelling at call \d/,
    },
  },
  'cancel-breaks-others': {
    about: 'cancelling one call cancels every call in flight (one shared connection torn down)',
    module: variant(
      class extends MemoryImplementation {
        protected override decorate(seam: MemorySeam, deps: Deps) {
          let shared = new AbortController();
          return super.decorate(
            wrapSeam(seam, (_m, args, call) => {
              const own = args.at(-1);
              if (shared.signal.aborted) shared = new AbortController();
              const mine = shared;
              if (own instanceof AbortSignal) {
                own.addEventListener('abort', () => mine.abort(own.reason), { once: true });
              }
              return call([...args.slice(0, -1), mine.signal]);
            }),
            deps,
          );
        }
      },
    ),
    fails: {
      'cancelling one call leaves another in flight unharmed': label('the other call completes'),
    },
  },
  'wrong-provider-name': {
    about: 'names its type instead of its configured name in errors',
    wrap: (p) => {
      const rename = (err: unknown) => {
        if (!ProviderError.isInstance(err)) return err;
        return new ProviderError(err.errorClass, {
          provider: p.type,
          op: err.op,
          message: err.message,
        });
      };
      return wrapped(p, {
        create: (r, o) => p.create(r, o).catch((e: unknown) => Promise.reject(rename(e))),
        get: (i, o) => p.get(i, o).catch((e: unknown) => Promise.reject(rename(e))),
        delete: (i, o) => p.delete(i, o).catch((e: unknown) => Promise.reject(rename(e))),
        listByTag: (o) => p.listByTag(o).catch((e: unknown) => Promise.reject(rename(e))),
      });
    },
    fails: {
      'errors carry the configured provider name and the operation': label(
        'provider named by the get error',
      ),
      'a malformed backend answer is a Transient error of the provider and operation': label(
        'provider named after a malformed create answer',
      ),
    },
  },
  'malformed-is-not-found': {
    about: 'takes an answer it cannot read for an instance that does not exist',
    module: variant(
      class extends MemoryImplementation {
        override async get(id: MemoryId, ctx: OperationContext): Promise<Instance> {
          const vm = await this.seam.lookup(id.name, ctx.signal);
          if (vm?.metadata === undefined) throw ctx.notFound(`instance ${id.name} does not exist`);
          return super.get(id, ctx);
        }
      },
    ),
    fails: {
      'a malformed backend answer is a Transient error of the provider and operation': label(
        'class of a malformed answer to get',
      ),
    },
  },
  'malformed-escapes-raw': {
    about: 'lets the raw parse failure escape instead of a provider error',
    wrap: (p) => {
      const raw = (err: unknown) =>
        ProviderError.isInstance(err) && err.code === 'PROVIDER_MALFORMED_ANSWER' ? err.cause : err;
      return wrapped(p, {
        create: (r, o) => p.create(r, o).catch((e: unknown) => Promise.reject(raw(e))),
      });
    },
    fails: {
      'a malformed backend answer is a Transient error of the provider and operation': label(
        'class of a malformed answer to create',
      ),
    },
  },
  'malformed-list-is-empty': {
    about: 'answers an empty list when the listing cannot be read',
    module: variant(
      class extends MemoryImplementation {
        override async list(installation: string, ctx: OperationContext) {
          try {
            return await super.list(installation, ctx);
          } catch (err) {
            if (err instanceof TypeError) return [];
            throw err;
          }
        }
      },
    ),
    fails: {
      'a malformed backend answer is a Transient error of the provider and operation': label(
        'class of a malformed answer to list',
      ),
    },
  },
  'classify-unknown-permanent': {
    about: 'classifies failures it does not know as Permanent',
    module: variant(MemoryImplementation, {
      classify: (op, err): ErrorClass => {
        const c = classify(op, err);
        return err instanceof Error && err.name === 'Error' ? 'Permanent' : c;
      },
    }),
    fails: { 'the classify table': label('classify: an unexpected error') },
  },
  'no-checker': {
    about: 'has no Checker though it says it has',
    module: variant(
      class extends MemoryImplementation {
        override readonly checker = undefined as never;
      },
    ),
    fails: {
      'the provider has a Checker exactly when it says so': label('the provider has check'),
    },
  },
  'check-unordered': {
    about: 'returns Checker results in completion order, not config order',
    wrap: (p) =>
      wrapped(p, {
        check: async (o) => {
          const results = await p.check!(o);
          return [...results].reverse();
        },
      }),
    fails: {
      'the Checker answers once per target, in config order': label(
        'the targets of a check round, in order',
      ),
    },
  },
  'check-unauthorized-as-apierror': {
    about: 'reports a refused token as APIError',
    module: variant(
      class extends MemoryImplementation {
        protected override async checkZone(
          target: CheckTarget,
          ctx: CheckContext,
        ): Promise<CheckAnswer> {
          const a = await super.checkZone(target, ctx);
          return a.reason === 'Unauthorized' ? { ...a, reason: 'APIError' } : a;
        }
      },
    ),
    fails: {
      'the Checker gives the reason for each situation': /^the reason when the token is refused/,
      'the credential never reaches logs, spans or errors': label(
        'the Checker with a refused credential',
      ),
    },
  },
  'check-ignores-signal': {
    about: 'lets the Checker run past its signal',
    wrap: (p) => wrapped(p, { check: () => p.check!() }),
    fails: {
      'the Checker answers Timeout promptly when its signal fires': label(
        'the reasons with an already-fired signal',
      ),
    },
  },
  'no-child-spans': {
    about: 'makes no span per backend call',
    module: variant(
      class extends MemoryImplementation {
        protected override decorate(seam: MemorySeam) {
          return seam;
        }
      },
    ),
    fails: {
      'backend calls make child spans under the operation span': label(
        'child spans under provider.create',
      ),
    },
  },
  'spans-as-roots': {
    about: 'starts its backend spans as new traces',
    module: variant(
      class extends MemoryImplementation {
        protected override decorate(seam: MemorySeam, deps: Deps) {
          const tracer = deps.tracer ?? trace.getTracer('flaw');
          return wrapSeam(seam, (method, args, call) => {
            const span = tracer.startSpan(`memory.${method}`, {}, ROOT_CONTEXT);
            return call(args).finally(() => span.end());
          });
        }
      },
    ),
    fails: {
      'no root spans but the operation spans (child spans are parent-gated)': /^root span memory\./,
      'backend calls make child spans under the operation span': label(
        'child spans under provider.create',
      ),
    },
  },
  'logs-at-info': {
    about: 'logs every backend call at info',
    module: variant(
      class extends MemoryImplementation {
        override async get(id: MemoryId, ctx: OperationContext): Promise<Instance> {
          this.log.info({ name: id.name }, 'memory get');
          return super.get(id, ctx);
        }
      },
    ),
    fails: {
      'silent at info; one debug outcome line per operation with traceId':
        label('lines at info and above'),
    },
  },
  'leaks-credential': {
    about: 'never declares the credential it reads, so the backend echo reaches errors',
    module: variant(
      class extends MemoryImplementation {
        constructor(name: string, config: MemoryConfig, deps: Deps) {
          super(name, config, { ...deps, secrets: { add() {} } as unknown as Deps['secrets'] });
        }
      },
    ),
    fails: {
      'the credential never reaches logs, spans or errors': label('the credential in an error'),
    },
  },
  'credential-in-span-hex': {
    about: 'puts the credential, hex-encoded, on its backend spans',
    module: variant(
      class extends MemoryImplementation {
        protected override decorate(seam: MemorySeam, deps: Deps) {
          const tracer = deps.tracer ?? trace.getTracer('flaw');
          return wrapSeam(super.decorate(seam, deps), (method, args, call) =>
            tracer.startActiveSpan(`memory.auth.${method}`, async (span) => {
              span.setAttribute('auth', Buffer.from(deps.credential()).toString('hex'));
              try {
                return await call(args);
              } finally {
                span.end();
              }
            }),
          );
        }
      },
    ),
    fails: {
      'the credential never reaches logs, spans or errors': label('the credential in the spans'),
    },
  },
  'caches-credential': {
    about: 'reads the credential once and never again',
    module: variant(
      class extends MemoryImplementation {
        constructor(name: string, config: MemoryConfig, deps: Deps) {
          let cached: string | undefined;
          super(name, config, {
            ...deps,
            credential: () => {
              cached ??= deps.credential();
              return cached;
            },
          });
        }
      },
    ),
    fails: {
      'a rotated credential is read without a restart': label(
        'Get after the credential was rotated',
      ),
    },
  },
};
