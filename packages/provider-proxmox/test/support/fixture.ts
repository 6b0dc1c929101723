// Builds the provider over the HTTPS fake (real undici client, real TLS) or
// over the seam fake, with the conformance harness over the shared model.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createProvider,
  type ErrorClass,
  formatMarkTime,
  MarkKey,
  type Operation,
  type Provider,
} from '@proxy-op/contract';
import { parsePasswordFile, verifyPassword } from '@proxy-op/forward-proxy';
import type {
  BackendHarness,
  ConformanceDeps,
  ConformanceFixture,
  PlantedMark,
} from '@proxy-op/providertest';
import { SERVICE_PASSWORD_FILE } from '@proxy-op/squid-config';
import type { Budgets } from '../../src/budgets.js';
import { classify } from '../../src/classify.js';
import { apiErrorFrom } from '../../src/client.js';
import { CaFileError, TaskFailedError, TokenFileError } from '../../src/errors.js';
import { formatId, parseId } from '../../src/id.js';
import { formatDescription } from '../../src/mark.js';
import { providerModule } from '../../src/module.js';
import { vmidFor } from '../../src/vmid.js';
import { captured } from './answers.js';
import { FakeApi } from './fake-api.js';
import { type HttpsFake, type HttpsFakeOptions, startHttpsFake } from './https-fake.js';
import { fastTiming, type ModelVm, PveModel, type Timing } from './pve-model.js';

/** The secret part of the fixture's token: it must never leak. */
export const TOKEN_SENTINEL = 'tok-SENTINEL-4e1c-proxmox-never-log-me';
export const TOKEN_LINE = `proxy-operator@pve!op=${TOKEN_SENTINEL}`;
export const TEMPLATE_VMID = 9001;
export const NODES = ['pv1-1', 'pv1-2'];

/** Budgets small enough for tests. */
export const FAST_BUDGETS: Budgets = {
  clone: 3_000,
  upload: 3_000,
  resize: 3_000,
  start: 3_000,
  stop: 3_000,
  destroy: 3_000,
  seedDelete: 3_000,
  running: 3_000,
  guestExec: 3_000,
  poll: 5,
};

/** The per-call budget (`requestTimeoutSeconds`) the conformance suite runs with, in ms. */
// Generous: a loaded 2-core machine can take longer than a second to answer an in-process fake.
export const CALL_BUDGET_MS = 3_000;
/** How long a task runs in the conformance runs: short, but long enough to be seen running. */
export const CONFORMANCE_TASK_MS = 10;

export interface FixtureOptions {
  /** `https` (default): undici over TLS to the HTTPS fake; `seam`: the seam fake. */
  readonly peer?: 'https' | 'seam';
  /**
   * How long things take on the double (default: a real host's pace, see
   * REALISTIC_TIMING); `fastTiming(ms)` for tests that need speed.
   */
  readonly timing?: Partial<Timing>;
  /** Options of the HTTPS fake. */
  readonly https?: HttpsFakeOptions;
  readonly nodes?: string[];
  /** Extra config fields. */
  readonly config?: Record<string, unknown>;
  readonly budgets?: Partial<Budgets>;
}

export interface ProxmoxFixture extends ConformanceFixture {
  readonly model: PveModel;
  readonly fake: HttpsFake | undefined;
  readonly api: FakeApi | undefined;
  readonly config: Record<string, unknown>;
  readonly dir: string;
  readonly tokenFile: string;
}

let plantVmid = 5000;

/** The VMID and name of a provider ID; throws when it is malformed. */
export function idOf(id: string): { vmid: number; name: string } {
  const parts = parseId(id);
  if (parts === undefined) throw new Error(`not a Proxmox provider ID: ${id}`);
  return parts;
}

/** The model's VM behind a provider ID. */
export function vmOf(model: PveModel, id: string): ModelVm {
  const { vmid } = idOf(id);
  const vm = model.vms.get(vmid);
  if (vm === undefined) throw new Error(`no VM ${vmid}`);
  return vm;
}

/** The description lines of a planted mark (an old-style one without the installation key when it names none). */
function markText(mark: PlantedMark): string {
  const lines = [
    `${MarkKey.Managed}=true`,
    `${MarkKey.Uid}=${mark.uid}`,
    `${MarkKey.CreatedAt}=${formatMarkTime(new Date(Date.now() - 3_600_000))}`,
    ...(mark.installation === undefined ? [] : [`${MarkKey.Installation}=${mark.installation}`]),
  ];
  return `${lines.join('\n')}\n`;
}

/** The conformance suite's fixture: short tasks and a short per-call budget. */
export function createConformanceFixture(
  deps: Partial<ConformanceDeps>,
  peer: 'https' | 'seam',
): Promise<ProxmoxFixture> {
  return createProxmoxFixture(deps, {
    peer,
    timing: fastTiming(CONFORMANCE_TASK_MS),
    config: { requestTimeoutSeconds: CALL_BUDGET_MS / 1000 },
  });
}

export async function createProxmoxFixture(
  deps: Partial<ConformanceDeps>,
  opts: FixtureOptions = {},
): Promise<ProxmoxFixture> {
  const nodes = opts.nodes ?? NODES;
  const model = new PveModel({ nodes, token: TOKEN_LINE, timing: opts.timing });
  model.addTemplate(TEMPLATE_VMID);
  const dir = mkdtempSync(join(tmpdir(), 'pve-fixture-'));
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, `${TOKEN_LINE}\n`);
  const peer = opts.peer ?? 'https';
  const fake = peer === 'https' ? await startHttpsFake(model, opts.https) : undefined;
  const api = peer === 'seam' ? new FakeApi(model) : undefined;
  const config: Record<string, unknown> = {
    url: fake?.url ?? 'https://pve.invalid:8006',
    tokenFile,
    ...(fake === undefined ? {} : { caFile: fake.pki.caFile }),
    nodes,
    isoStorage: 'proxy-seeds',
    templates: { 'debian-13': { vmid: TEMPLATE_VMID } },
    machineTypes: {
      small: { cores: 1, memoryMiB: 1024 },
      large: { cores: 2, memoryMiB: 2048, diskGiB: 8 },
    },
    ...opts.config,
  };
  const withNodes = (configured: readonly string[]): Promise<Provider> =>
    createProvider(
      providerModule,
      'proxmox-home',
      { ...config, nodes: configured },
      {
        ...deps,
        budgets: { ...FAST_BUDGETS, ...opts.budgets },
        ...(api === undefined ? {} : { api }),
      },
    );
  const provider = await withNodes(nodes);
  const placed = (zone: string | undefined) => ({
    ...(zone === undefined ? {} : { zone }),
    machineType: 'small',
    image: 'debian-13',
  });
  const [first, second] = nodes as [string, string | undefined];
  const range = { min: 100_000, max: 199_999 };
  const vm = (id: string) => vmOf(model, id);
  const nextVmid = () => {
    while (model.vms.has(plantVmid)) plantVmid++;
    return plantVmid++;
  };
  /** A running VM named `name` with a disk of its own, as a person or another tool makes one. */
  const plant = (name: string, description: string | undefined, at?: ModelVm): string => {
    const vmid = at?.vmid ?? nextVmid();
    model.addVm({
      vmid,
      node: at?.node ?? (nodes[0] as string),
      name,
      status: 'running',
      config: {
        name,
        ...(description === undefined ? {} : { description }),
        scsi0: `local-lvm:vm-${vmid}-disk-0,size=3G`,
        boot: 'order=scsi0',
        net0: 'virtio=BC:24:11:00:00:09,bridge=vmbr0',
        agent: '1',
      },
    });
    return formatId({ vmid, name });
  };
  let rotations = 0;

  const harness: BackendHarness = {
    baseRequest: {
      namespace: 'default',
      port: 3128,
      placement: { zone: nodes[0] as string, machineType: 'small', image: 'debian-13' },
    },
    invalidPlacements: [
      {
        placement: { zone: nodes[0], machineType: 'huge', image: 'debian-13' },
        field: 'placement.machineType',
      },
      { placement: { zone: nodes[0], image: 'debian-13' }, field: 'placement.machineType' },
      {
        placement: { zone: nodes[0], machineType: 'small', image: 'windows' },
        field: 'placement.image',
      },
      {
        placement: { zone: 'mars', machineType: 'small', image: 'debian-13' },
        field: 'placement.zone',
      },
      ...(nodes.length > 1
        ? [{ placement: { machineType: 'small', image: 'debian-13' }, field: 'placement.zone' }]
        : []),
    ],
    // A node is a zone: with one node a request may leave it out, with several it must name
    // one. (The template's disks are on the first node's local storage, so a clone stays there.)
    zoneConfigurations:
      second === undefined
        ? []
        : [
            {
              zones: nodes,
              accepted: [placed(first)],
              refused: [
                { placement: placed(undefined), field: 'placement.zone' },
                { placement: placed(''), field: 'placement.zone' },
              ],
            },
            {
              zones: [first],
              accepted: [placed(undefined), placed(''), placed(first)],
              refused: [
                { placement: placed(second), field: 'placement.zone' },
                { placement: placed('mars'), field: 'placement.zone' },
              ],
            },
          ],
    withZones: withNodes,
    backendCalls: () => model.calls.length,
    instanceCount: async () => model.guests().length,
    secondaryCount: async () => model.secondaryCount(),
    setRunning: async (id, ip) => {
      const v = vm(id);
      // Running for a while: the guest has booted and its agent answers.
      v.status = 'running';
      v.qmpstatus = 'running';
      v.startedAt = Date.now() - model.timing.agentBootMs - 1_000;
      v.agentChannel = true;
      v.guestAgent = 'up';
      if (ip === undefined) v.guestNet = 'no-ipv4';
      else {
        v.guestNet = 'ip';
        v.ip = ip;
      }
    },
    setState: async (id, state) => {
      const v = vm(id);
      if (state === 'running') {
        v.status = 'running';
        v.qmpstatus = 'running';
      } else if (state === 'stopped') {
        v.status = 'stopped';
        v.qmpstatus = 'stopped';
        v.agentChannel = false;
      } else {
        // A state the provider has no row for: the guest panicked.
        v.status = 'running';
        v.qmpstatus = 'guest-panicked';
      }
    },
    rewriteMark: async (id, mark) => {
      const v = vm(id);
      v.config.description = (v.config.description ?? '')
        .split('\n')
        .map((l) =>
          l.startsWith(`${MarkKey.Uid}=`)
            ? `${MarkKey.Uid}=${mark.uid}`
            : l.startsWith(`${MarkKey.CreatedAt}=`)
              ? `${MarkKey.CreatedAt}=${formatMarkTime(mark.createdAt)}`
              : l,
        )
        .join('\n');
    },
    replaceInstance: async (id, mark) => {
      const old = vm(id);
      model.removeVm(old.vmid);
      plant(idOf(id).name, mark === undefined ? 'made by hand' : markText(mark), old);
    },
    holdLock: async (id) => {
      const v = vm(id);
      v.lock = 'backup';
      return async () => {
        v.lock = undefined;
      };
    },
    holdNextDelete: (id) => model.holdNextTask('qmdestroy', idOf(id).vmid),
    plantNeverStarted: async (req) => {
      // Create cut off right after its clone: marked, unlocked, not configured, never started.
      const vmid = vmidFor(req.uid, 0, range);
      const description = formatDescription({
        uid: req.uid,
        createdAt: new Date(),
        installation: req.installation ?? 'default',
      });
      model.cloneNow(TEMPLATE_VMID, vmid, req.name, description);
      return formatId({ vmid, name: req.name });
    },
    plantUnmarked: async (name) => plant(name, 'made by hand'),
    plantMarked: async (name, mark) => plant(name, markText(mark)),
    blockCalls: (skip) => model.blockCalls(skip),
    injectMalformed: () => model.malformNext(),
    callBudgetMs: ((config.requestTimeoutSeconds as number | undefined) ?? 30) * 1000,
    classifyCases: CLASSIFY_CASES,
    classify,
    checkTargets: nodes,
    delayTarget: (target, ms) => {
      model.nodeDelay.set(target, ms);
    },
    checkScenarios: [
      { name: 'every node answers', arrange: () => {}, want: 'Reachable' },
      {
        name: 'the token is refused',
        arrange: () => {
          model.acceptedToken = 'someone@pve!else=x';
        },
        want: 'Unauthorized',
      },
      {
        name: 'the last node is unreachable (595)',
        arrange: () => {
          model.unreachableNodes.add(nodes[nodes.length - 1] as string);
        },
        want: 'Unreachable',
        target: nodes[nodes.length - 1] as string,
      },
      {
        name: 'the seed storage is missing on the last node',
        arrange: () => {
          model.storages.delete(`${nodes[nodes.length - 1]}/proxy-seeds`);
        },
        want: 'StorageNotFound',
        target: nodes[nodes.length - 1] as string,
      },
      {
        name: 'the template is gone',
        arrange: () => {
          model.vms.delete(TEMPLATE_VMID);
        },
        want: 'TemplateNotFound',
      },
      {
        name: 'the token lacks Sys.Audit',
        arrange: () => {
          model.forbidden.set('nodeStatus', '/nodes/pv1-1, Sys.Audit');
        },
        want: 'Forbidden',
      },
      {
        name: 'the token file is missing',
        arrange: () => {
          rmSync(tokenFile);
        },
        want: 'CredentialsUnavailable',
      },
    ],
    // The guest as the operator's default cloud-init leaves it: booted, the agent up, the file there.
    deliverAuth: async (id, auth) => {
      const v = vm(id);
      v.guestAgent = 'up';
      v.startedAt = Math.min(v.startedAt, Date.now() - model.timing.agentBootMs - 1_000);
      v.guest.placePasswordFile(SERVICE_PASSWORD_FILE, auth.passwordFile);
    },
    // No Squid runs in the model: the answer basic_ncsa_auth would give for the guest's file.
    acceptsCredential: async (id, { username, password }) => {
      const text = vm(id).guest.text(SERVICE_PASSWORD_FILE, id);
      const hash = parsePasswordFile(text).get(username);
      return hash !== undefined && verifyPassword(password, hash);
    },
    authSettleMs: 1000,
    credentialSentinel: TOKEN_SENTINEL,
    rejectCredential: () => {
      model.acceptedToken = 'proxy-operator@pve!op=rotated-elsewhere';
      model.echoRejectedToken = true;
    },
    rotateCredential: () => {
      // An admin replaces the token: the Secret's file changes, and Proxmox accepts only the new one.
      const line = `proxy-operator@pve!op=rotated-${++rotations}-5c0ffee-secret`;
      writeFileSync(tokenFile, `${line}\n`);
      model.acceptedToken = line;
      model.echoRejectedToken = false;
      if (api !== undefined) api.token = line;
    },
  };
  return {
    provider,
    harness,
    model,
    fake,
    api,
    config,
    dir,
    tokenFile,
    cleanup: async () => {
      await provider.close?.();
      await fake?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const tlsError = Object.assign(new Error('unable to verify the first certificate'), {
  code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
});

/** The ApiError the HTTPS client makes of a kept answer (test/fixtures/pve). */
export function errorOfAnswer(name: string): Error {
  const a = captured(name);
  return apiErrorFrom(a.status, a.reason, a.body);
}

/**
 * The class each kept error answer must get, and the operation it is met
 * in. Every kept error answer has a row (test/answers.test.ts checks it).
 */
export const ANSWER_CLASSES: Readonly<Record<string, { op: Operation; want: ErrorClass }>> = {
  'error-401-token': { op: 'get', want: 'Permanent' },
  'error-401-no-ticket': { op: 'list', want: 'Permanent' },
  'error-403': { op: 'delete', want: 'Permanent' },
  'error-400-param': { op: 'create', want: 'Permanent' },
  'error-400-tag': { op: 'create', want: 'Permanent' },
  'error-400-upload-name': { op: 'create', want: 'Permanent' },
  'error-400-no-such-storage': { op: 'create', want: 'Permanent' },
  'error-500-does-not-exist': { op: 'get', want: 'NotFound' },
  'error-500-locked': { op: 'delete', want: 'Transient' },
  'error-500-config-exists': { op: 'create', want: 'Transient' },
  'error-500-agent-not-running': { op: 'get', want: 'Transient' },
  'error-500-agent-not-configured': { op: 'get', want: 'Transient' },
  'error-500-vm-not-running': { op: 'get', want: 'Transient' },
  'error-500-destroy-running': { op: 'delete', want: 'Transient' },
  'error-500-no-such-node': { op: 'get', want: 'Transient' },
  'error-500-upload-failed': { op: 'create', want: 'Transient' },
  'error-501-not-implemented': { op: 'get', want: 'Transient' },
  'error-501-chunked': { op: 'create', want: 'Transient' },
  'error-502-html-proxy': { op: 'list', want: 'Transient' },
  'error-595': { op: 'get', want: 'Transient' },
  'error-596': { op: 'list', want: 'Transient' },
};

/** Realistic failures, each with the class it must get: every kept error answer, and the client's own. */
export const CLASSIFY_CASES: BackendHarness['classifyCases'] = [
  ...Object.entries(ANSWER_CLASSES).map(([name, { op, want }]) => ({
    name: `${captured(name).status} ${captured(name).reason} (kept answer ${name})`,
    op,
    error: errorOfAnswer(name),
    want,
  })),
  {
    name: '500 config does not exist inside delete',
    op: 'delete',
    error: errorOfAnswer('error-500-does-not-exist'),
    want: 'NotFound',
  },
  {
    name: 'task failed: shrinking disks is not supported',
    op: 'create',
    error: new TaskFailedError(
      'UPID:pv1-1:00001234:00005678:65000000:resize:100123:root@pam:',
      'shrinking disks is not supported',
    ),
    want: 'Transient',
  },
  { name: 'TLS verification failure', op: 'get', error: tlsError, want: 'Permanent' },
  {
    name: 'TLS failure wrapped by fetch',
    op: 'list',
    error: new TypeError('fetch failed', { cause: tlsError }),
    want: 'Permanent',
  },
  {
    name: 'token file missing',
    op: 'get',
    error: new TokenFileError('PROXMOX_TOKEN_MISSING', 'token file x cannot be read (ENOENT)'),
    want: 'Transient',
  },
  {
    name: 'token file malformed',
    op: 'get',
    error: new TokenFileError('PROXMOX_TOKEN_MALFORMED', 'token file x is malformed'),
    want: 'Permanent',
  },
  {
    name: 'CA file missing',
    op: 'get',
    error: new CaFileError('PROXMOX_CA_MISSING', 'CA file x cannot be read'),
    want: 'Transient',
  },
  {
    name: 'CA file holds no certificate',
    op: 'get',
    error: new CaFileError('PROXMOX_CA_INVALID', 'no PEM'),
    want: 'Permanent',
  },
  {
    name: 'connection refused',
    op: 'get',
    error: Object.assign(new Error('connect ECONNREFUSED 192.168.0.8:8006'), {
      code: 'ECONNREFUSED',
    }),
    want: 'Transient',
  },
  {
    name: 'connection closed mid-answer',
    op: 'get',
    error: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
    want: 'Transient',
  },
  {
    name: 'request timed out',
    op: 'get',
    error: new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
    want: 'Transient',
  },
];
