// A provider written outside the proxy-op repository, from the READMEs of @proxy-op/contract
// and @proxy-op/providertest: "acme", for the simulated Acme Cloud of acme-api.ts. It shows what
// a third-party author writes: the module (implementation, classify, profile, config schema)
// and the harness the conformance suite drives.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  adoptionProblem,
  type CheckAnswer,
  type CheckContext,
  type CheckedCreateRequest,
  type CheckTarget,
  type ConfigSchema,
  createProvider,
  type DeleteContext,
  deletionProblem,
  type ErrorClass,
  type ImplementationChecker,
  type Instance,
  idFormat,
  type Mark,
  MarkKey,
  type OperationContext,
  observeSeam,
  type Profile,
  type ProviderDeps,
  type ProviderImplementation,
  type ProviderModule,
  parseMark,
  Reason,
  requireOneOf,
  type ShellDeps,
  type State,
} from '@proxy-op/contract';
import type { BackendHarness, ConformanceDeps, PlantedMark } from '@proxy-op/providertest';
import { type AcmeClient, AcmeCloud, AcmeHttpError, type Machine } from './acme-api.js';

export interface AcmeConfig {
  readonly tokenFile: string;
  readonly zones: readonly string[];
  readonly machineTypes: readonly string[];
  readonly images: readonly string[];
}

export interface AcmeDeps extends ProviderDeps {
  readonly cloud: AcmeCloud;
}

const ids = idFormat(['machines', ':name'], { name: /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/ });
type AcmeId = { name: string };

export const profile: Profile = {
  readiness: 'provisioning-window',
  createReturn: 'submit',
  deleteReturn: 'returns-early',
  ipSource: 'discovered',
  gcMark: 'native-labels',
  createdAt: 'backend-timestamp',
  listPartial: 'single-call',
  quota: 'detected',
  notFound: 'status-404',
  primaryKey: 'name-is-key',
  provisioningState: 'native',
  asyncOps: [],
  secondaryResources: 'cascade',
  credentials: 'mounted-files',
  clientKind: 'vendor-sdk',
  timeouts: 'signal-only',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'manual-runbook',
};

export function classify(_op: string, err: unknown): ErrorClass {
  if (!(err instanceof AcmeHttpError)) return 'Transient';
  if (err.status === 404) return 'NotFound';
  if (err.status === 403 && err.body.startsWith('quotaExceeded')) return 'QuotaExceeded';
  if (err.status === 400 || err.status === 401 || err.status === 403) return 'Permanent';
  return 'Transient';
}

export const configSchema: ConfigSchema<AcmeConfig> = {
  '~standard': {
    version: 1,
    vendor: 'acme',
    validate(input) {
      const o = (input ?? {}) as Partial<AcmeConfig>;
      if (typeof o.tokenFile !== 'string' || o.tokenFile === '') {
        return {
          issues: [
            { message: 'is required: the path of the mounted API token', path: ['tokenFile'] },
          ],
        };
      }
      return {
        value: {
          tokenFile: o.tokenFile,
          zones: o.zones ?? ['west-1'],
          machineTypes: o.machineTypes ?? ['small'],
          images: o.images ?? ['ubuntu'],
        },
      };
    },
  },
};

/** Labels hold the mark; the creation time comes from the API (labels cannot hold it). */
function markOf(m: Machine): Mark | undefined {
  return parseMark({ ...m.labels, [MarkKey.CreatedAt]: m.created });
}

function stateOf(m: Machine): State {
  switch (m.state) {
    case 'PROVISIONING':
      return 'Provisioning';
    case 'RUNNING':
      return m.address === undefined ? 'Provisioning' : 'Running';
    case 'DELETING':
      return 'Terminated';
    default:
      return 'Stopped';
  }
}

export class AcmeImplementation implements ProviderImplementation<AcmeId> {
  readonly ids = ids;
  protected readonly api: AcmeClient;

  constructor(
    readonly name: string,
    protected readonly config: AcmeConfig,
    deps: AcmeDeps & ShellDeps,
  ) {
    const token = () => {
      const t = readFileSync(config.tokenFile, 'utf8').trim();
      deps.secrets.add(t);
      return t;
    };
    this.api = observeSeam(deps.cloud.client(token), {
      prefix: 'acme',
      provider: name,
      tracer: deps.tracer,
      logger: deps.logger,
      fields: (_method, args): Record<string, string> =>
        typeof args[0] === 'string' ? { machine: args[0] } : {},
    });
  }

  lockKey(id: AcmeId): string {
    return id.name;
  }

  async create(req: CheckedCreateRequest, ctx: OperationContext): Promise<string> {
    const c = this.config;
    if (c.zones.length > 1 || req.placement.zone !== undefined) {
      requireOneOf(ctx.provider, 'placement.zone', req.placement.zone, c.zones, 'acme.zones');
    }
    requireOneOf(
      ctx.provider,
      'placement.machineType',
      req.placement.machineType,
      c.machineTypes,
      'acme.machineTypes',
    );
    requireOneOf(ctx.provider, 'placement.image', req.placement.image, c.images, 'acme.images');
    const existing = await this.find(req.name, ctx);
    if (existing !== undefined) {
      const problem = adoptionProblem(markOf(existing), req);
      if (problem !== undefined) {
        throw ctx.permanent(`machine ${req.name} exists and ${problem}; rename or remove it`);
      }
      return ids.format(req);
    }
    await this.api.insertMachine(
      {
        name: req.name,
        labels: {
          [MarkKey.Managed]: 'true',
          [MarkKey.Uid]: req.uid,
          [MarkKey.Installation]: req.installation,
        },
        userData: Buffer.from(req.cloudInit).toString('base64'),
      },
      ctx.signal,
    );
    return ids.format(req);
  }

  /** The machine, or undefined when the API answers 404. */
  protected async find(name: string, ctx: OperationContext): Promise<Machine | undefined> {
    try {
      return await this.api.getMachine(name, ctx.signal);
    } catch (err) {
      if (err instanceof AcmeHttpError && err.status === 404) return undefined;
      throw err;
    }
  }

  async get(id: AcmeId, ctx: OperationContext): Promise<Instance> {
    const m = await this.find(id.name, ctx);
    if (m === undefined) {
      // Gone, or never made: an insert that failed after it was accepted says why.
      const insert = await this.api.getInsert(id.name, ctx.signal);
      if (insert?.error !== undefined)
        throw new AcmeHttpError(insert.error.status, insert.error.body);
      if (insert?.done === false) throw ctx.transient(`machine ${id.name} is still being inserted`);
    }
    const mark = m === undefined ? undefined : markOf(m);
    if (m === undefined || mark === undefined)
      throw ctx.notFound(`machine ${id.name} is not ours or gone`);
    const state = this.state(m);
    return {
      id: ids.format(id),
      uid: mark.uid,
      createdAt: mark.createdAt,
      state,
      ip: state === 'Running' ? m.address : undefined,
    };
  }

  protected state(m: Machine): State {
    return stateOf(m);
  }

  async delete(id: AcmeId, ctx: DeleteContext): Promise<void> {
    const m = await this.find(id.name, ctx);
    if (m === undefined) {
      // Forget a failed insert, so Get answers NotFound from now on.
      if ((await this.api.getInsert(id.name, ctx.signal))?.error !== undefined) {
        await this.api.deleteInsert(id.name, ctx.signal);
      }
      return;
    }
    if (m.state === 'DELETING') return;
    if (deletionProblem(markOf(m), ctx.owner) !== undefined) return;
    try {
      await this.api.deleteMachine(id.name, ctx.signal);
    } catch (err) {
      if (!(err instanceof AcmeHttpError && err.status === 404)) throw err;
    }
  }

  async list(installation: string, ctx: OperationContext): Promise<Instance[]> {
    const machines = await this.api.listMachines(MarkKey.Managed, ctx.signal);
    return machines.flatMap((m) => {
      const mark = markOf(m);
      if (mark === undefined || mark.installation !== installation) return [];
      return [{ id: ids.format(m), uid: mark.uid, createdAt: mark.createdAt, installation }];
    });
  }

  readonly checker: ImplementationChecker = {
    targets: () => [{ target: 'acme-api', address: 'https://api.acme.example' }],
    check: async (_target: CheckTarget, ctx: CheckContext): Promise<CheckAnswer> => {
      ctx.details.region = (await this.api.ping(ctx.signal)).region;
      return { reason: Reason.Reachable, message: 'the API answers' };
    },
    // The reasons for what check threw; anything else is the shell's APIError.
    failed: (err) => {
      if (err instanceof AcmeHttpError && err.status === 401) {
        return { reason: Reason.Unauthorized, message: 'the token was refused; rotate the Secret' };
      }
      if (err instanceof AcmeHttpError && err.status === 503) {
        return { reason: Reason.Unreachable, message: 'the API is unavailable' };
      }
      return undefined;
    },
  };
}

export const providerModule: ProviderModule<AcmeConfig, AcmeDeps, AcmeId> = {
  type: 'acme',
  configSchema,
  profile,
  classify,
  create: (name, config, deps) => new AcmeImplementation(name, config, deps),
};

/** The factory for the conformance suite: a fresh cloud, token file and provider. */
export async function createAcmeFixture(
  deps: ConformanceDeps,
  module: ProviderModule<AcmeConfig, AcmeDeps, AcmeId> = providerModule,
) {
  const dir = mkdtempSync(join(tmpdir(), 'acme-'));
  const tokenFile = join(dir, 'token');
  let token = 'acme-token-1';
  writeFileSync(tokenFile, token);
  const cloud = new AcmeCloud(token);
  const provider = await createProvider(module, 'acme-1', { tokenFile }, { ...deps, cloud });
  const name = (id: string) => {
    const parts = ids.parse(id);
    if (parts === undefined) throw new Error(`not an acme ID: ${id}`);
    return parts.name;
  };
  const labels = (mark: PlantedMark | undefined): Record<string, string> =>
    mark === undefined
      ? {}
      : {
          [MarkKey.Managed]: 'true',
          [MarkKey.Uid]: mark.uid,
          ...(mark.installation === undefined ? {} : { [MarkKey.Installation]: mark.installation }),
        };
  const plant = (machine: string, mark: PlantedMark | undefined) => {
    cloud.put({
      name: machine,
      state: 'RUNNING',
      address: '10.1.1.1',
      labels: labels(mark),
      created: new Date().toISOString(),
    });
    cloud.disks.add(`${machine}-boot`);
    return ids.format({ name: machine });
  };
  const sentinel = 'acme-SENTINEL-credential-4c2d';
  const harness: BackendHarness = {
    baseRequest: {
      namespace: 'default',
      port: 3128,
      placement: { machineType: 'small', image: 'ubuntu' },
    },
    invalidPlacements: [
      { placement: { machineType: 'huge', image: 'ubuntu' }, field: 'placement.machineType' },
      { placement: { machineType: 'small', image: 'windows' }, field: 'placement.image' },
      {
        placement: { zone: 'east-9', machineType: 'small', image: 'ubuntu' },
        field: 'placement.zone',
      },
    ],
    backendCalls: () => cloud.calls,
    instanceCount: async () => cloud.machines.size,
    secondaryCount: async () => cloud.disks.size,
    setRunning: async (id, ip) => cloud.update(name(id), { state: 'RUNNING', address: ip }),
    setState: async (id, state) =>
      state === 'running'
        ? cloud.update(name(id), { state: 'RUNNING' })
        : cloud.update(name(id), {
            state: state === 'stopped' ? 'STOPPED' : 'REPAIRING',
            address: undefined,
          }),
    rewriteMark: async (id, m) => {
      const machine = cloud.machines.get(name(id));
      cloud.update(name(id), {
        labels: { ...machine?.labels, [MarkKey.Uid]: m.uid },
        created: m.createdAt.toISOString(),
      });
    },
    replaceInstance: async (id, mark) => {
      plant(name(id), mark);
    },
    holdNextDelete: (id) => cloud.holdNextDelete(name(id)),
    plantNeverStarted: async (req) => {
      cloud.put({
        name: req.name,
        state: 'PROVISIONING',
        labels: labels({ uid: req.uid, installation: req.installation ?? 'default' }),
        created: new Date().toISOString(),
      });
      cloud.disks.add(`${req.name}-boot`);
      return ids.format(req);
    },
    plantUnmarked: async (machine) => plant(machine, undefined),
    plantMarked: async (machine, mark) => plant(machine, mark),
    blockCalls: (skip) => cloud.blockCalls(skip),
    injectMalformed: () => cloud.answerNextWithNull(),
    exhaustCapacity: () => cloud.limitMachines(cloud.machines.size),
    failNextCreateLater: () => cloud.failNextInsertLater(),
    classifyCases: [
      {
        name: '404 not found',
        op: 'get',
        error: new AcmeHttpError(404, 'machine x not found'),
        want: 'NotFound',
      },
      {
        name: '409 exists',
        op: 'create',
        error: new AcmeHttpError(409, 'exists'),
        want: 'Transient',
      },
      {
        name: '401 bad token',
        op: 'get',
        error: new AcmeHttpError(401, 'invalid'),
        want: 'Permanent',
      },
      {
        name: '403 denied',
        op: 'create',
        error: new AcmeHttpError(403, 'permission denied'),
        want: 'Permanent',
      },
      {
        name: '403 quota',
        op: 'create',
        error: new AcmeHttpError(403, 'quotaExceeded: limit'),
        want: 'QuotaExceeded',
      },
      { name: '503', op: 'list', error: new AcmeHttpError(503, 'unavailable'), want: 'Transient' },
    ],
    classify: (op, err) => module.classify(op, err),
    checkTargets: ['acme-api'],
    checkScenarios: [
      { name: 'the API answers', arrange: () => {}, want: 'Reachable' },
      { name: 'the API is down', arrange: () => cloud.setDown(), want: 'Unreachable' },
    ],
    credentialSentinel: sentinel,
    rejectCredential: () => writeFileSync(tokenFile, sentinel),
    rotateCredential: () => {
      token = `acme-token-${Date.now()}`;
      cloud.acceptOnly(token);
      writeFileSync(tokenFile, token);
    },
    settle: async () => cloud.settle(),
  };
  return { provider, harness, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
