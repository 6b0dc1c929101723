/**
 * The Proxmox VE provider: Create, Get, Delete, ListByTag and the Checker.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { ProxyTracerProvider } from '@opentelemetry/api';
import {
  abortedError,
  adoptionProblem,
  belongsTo,
  type CallOptions,
  type CheckedCreateRequest,
  type Clock,
  type CreateRequest,
  checkCreateRequest,
  type Instance,
  type ListOptions,
  type Logger,
  listInstallation,
  type Mark,
  notFound,
  type Operation,
  observeSeam,
  type Provider,
  type ProviderDeps,
  ProviderError,
  permanent,
  providerError,
  Reason,
  requireOneOf,
  type State,
  silentLogger,
  sleep,
  systemClock,
  type TargetResult,
  throwIfAborted,
  transient,
} from '@proxy-op/contract';
import { KeyedLock } from '@proxy-op/keyedlock';
import { buildSeedISO, NoCloudError } from '@proxy-op/nocloud';
import { ApiError, type ProxmoxApi, type ResourceEntry, type VmConfig } from './api.js';
import { type Budgets, DEFAULT_BUDGETS } from './budgets.js';
import {
  AGENT_NOT_CONFIGURED,
  AGENT_NOT_RUNNING,
  classify,
  isConfigExists,
  isDoesNotExist,
  isNoSuchStorage,
  reasonFor,
  TaskFailedError,
  TaskTimeoutError,
} from './classify.js';
import { HttpProxmoxApi, readToken } from './client.js';
import type { MachineTypeEntry, ProxmoxConfig } from './config.js';
import { bootDisk, cloudInitDrives, diskSizeBytes, rewriteNet0 } from './disk.js';
import { formatId, parseId } from './id.js';
import { formatDescription, hasProxyTag, PROXY_TAG, parseDescription } from './mark.js';
import { MAX_PROBES, vmidFor } from './vmid.js';

/** What the Proxmox module takes besides the contract's dependencies. */
export interface ProxmoxDeps extends ProviderDeps {
  /**
   * A seam to use instead of the HTTPS client (tests and tools that wrap
   * the API themselves). It is decorated with the call log like the
   * client is.
   */
  readonly api?: ProxmoxApi | undefined;
  /** Overrides of the wait budgets (tests shrink them). */
  readonly budgets?: Partial<Budgets> | undefined;
}

/** The Checker's own reasons, besides the contract's shared ones. */
export const ProxmoxReason = {
  /** TLS verification failed, or caFile is missing or holds no certificate: fix url or caFile. */
  CertificateInvalid: 'CertificateInvalid',
  /** The token file is missing or malformed: fix the Secret. */
  CredentialsUnavailable: 'CredentialsUnavailable',
  /** isoStorage is missing, inactive or holds no iso content on the node. */
  StorageNotFound: 'StorageNotFound',
  /** A configured template VMID does not exist or is not a template. */
  TemplateNotFound: 'TemplateNotFound',
} as const;

/** Safe identifiers of a seam call, for its log line: never a description, body or token. */
const SAFE_FIELDS = [
  'node',
  'vmid',
  'storage',
  'upid',
  'newid',
  'name',
  'filename',
  'volid',
  'disk',
];

// observeSeam logs one line per call; the HTTP spans come from the client,
// so the decorator is given a tracer that records nothing.
const NO_SPANS = new ProxyTracerProvider().getTracer('@proxy-op/provider-proxmox/seam');

/** Wraps a seam with the one-line-per-call debug log. */
export function decorateApi(api: ProxmoxApi, provider: string, logger: Logger): ProxmoxApi {
  return observeSeam(api, {
    prefix: 'proxmox',
    provider,
    logger,
    tracer: NO_SPANS,
    fields: (_method, args) => {
      const out: Record<string, string | number> = {};
      const first = args[0];
      if (typeof first === 'object' && first !== null) {
        for (const key of SAFE_FIELDS) {
          const v = (first as Record<string, unknown>)[key];
          if (typeof v === 'string' || typeof v === 'number') out[key] = v;
        }
      }
      return out;
    },
    errorFields: (err) =>
      err instanceof ApiError
        ? { error: err.name, httpStatus: err.status, apiMessage: err.apiMessage }
        : {
            error: err instanceof Error ? err.name : typeof err,
            ...(typeof (err as { code?: unknown })?.code === 'string'
              ? { errorCode: (err as { code: string }).code }
              : {}),
          },
  });
}

interface Plan {
  readonly node: string;
  readonly machineTypeKey: string;
  readonly machineType: MachineTypeEntry;
  readonly imageKey: string;
  readonly templateVmid: number;
}

interface OurVm {
  readonly node: string;
  readonly vmid: number;
  readonly config: VmConfig;
}

type Ownership = { readonly kind: 'ours'; readonly vm: OurVm } | { readonly kind: 'foreign' };

/**
 * The provider. Build it with `createProvider(providerModule, name, config,
 * deps)`, which validates the config and adds the contract's observability.
 */
export class ProxmoxProvider implements Provider {
  readonly name: string;
  readonly type = 'proxmox';
  readonly #config: ProxmoxConfig;
  readonly #api: ProxmoxApi;
  readonly #owned: HttpProxmoxApi | undefined;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #budgets: Budgets;
  readonly #lock = new KeyedLock<string>();

  constructor(name: string, config: ProxmoxConfig, deps: ProxmoxDeps = {}) {
    this.name = name;
    this.#config = config;
    const base = deps.logger ?? silentLogger;
    this.#log = base.child({ provider: name });
    this.#clock = deps.clock ?? systemClock;
    this.#budgets = { ...DEFAULT_BUDGETS, ...deps.budgets };
    if (deps.api === undefined) {
      this.#owned = new HttpProxmoxApi({
        url: config.url,
        tokenFile: config.tokenFile,
        caFile: config.caFile,
        insecureSkipTLSVerify: config.insecureSkipTLSVerify,
        requestTimeoutMs: config.requestTimeoutSeconds * 1000,
        tracer: deps.tracer,
      });
      if (!existsSync(config.tokenFile)) {
        this.#log.warn(
          { tokenFile: config.tokenFile },
          'proxmox token file not found yet; calls fail as Transient until it appears',
        );
      }
    }
    if (config.insecureSkipTLSVerify) {
      this.#log.warn(
        { url: config.url },
        'proxmox TLS verification is off (insecureSkipTLSVerify)',
      );
    }
    this.#api = decorateApi(deps.api ?? (this.#owned as HttpProxmoxApi), name, base);
  }

  /** Closes the client's idle connections. */
  async close(): Promise<void> {
    await this.#owned?.close();
  }

  // ---------------------------------------------------------------- create

  /**
   * Creates the VM for `req`, or adopts and finishes the one a previous
   * attempt left, and resolves with its ID once it runs. Placement is
   * checked before any request.
   */
  async create(req: CreateRequest, opts?: CallOptions): Promise<string> {
    const r = checkCreateRequest(this.name, req);
    const plan = this.#plan(r);
    const signal = opts?.signal;
    throwIfAborted(signal, this.name, 'create');
    try {
      return await this.#lock.run(r.name, () => this.#create(r, plan, signal), { signal });
    } catch (err) {
      throw this.#fail('create', err, signal);
    }
  }

  #plan(r: CheckedCreateRequest): Plan {
    const c = this.#config;
    const zone = r.placement.zone;
    const node =
      c.nodes.length === 1 && (zone === undefined || zone === '')
        ? (c.nodes[0] as string)
        : requireOneOf(this.name, 'placement.zone', zone, c.nodes, 'proxmox.nodes');
    const machineTypeKey = requireOneOf(
      this.name,
      'placement.machineType',
      r.placement.machineType,
      Object.keys(c.machineTypes),
      'proxmox.machineTypes',
    );
    const imageKey = requireOneOf(
      this.name,
      'placement.image',
      r.placement.image,
      Object.keys(c.templates),
      'proxmox.templates',
    );
    return {
      node,
      machineTypeKey,
      machineType: c.machineTypes[machineTypeKey] as MachineTypeEntry,
      imageKey,
      templateVmid: (c.templates[imageKey] as { vmid: number }).vmid,
    };
  }

  async #create(r: CheckedCreateRequest, plan: Plan, signal?: AbortSignal): Promise<string> {
    const api = this.#api;
    this.#log.trace(
      {
        name: r.name,
        node: plan.node,
        machineType: plan.machineTypeKey,
        image: plan.imageKey,
        templateVmid: plan.templateVmid,
        installation: r.installation,
        cloudInitBytes: r.cloudInit.byteLength,
      },
      'proxmox create resolved',
    );
    const resources = await api.clusterResources(signal);
    const byName = resources.filter(
      (e) => e.type === 'qemu' && e.template !== 1 && e.name === r.name,
    );
    if (byName.length > 1) {
      throw permanent(
        this.name,
        'create',
        `more than one VM is named ${r.name} (VMIDs ${byName.map((e) => e.vmid).join(', ')}); remove the duplicates`,
      );
    }
    let vm: OurVm | undefined;
    if (byName.length === 1) {
      const own = await this.#ownership((byName[0] as ResourceEntry).vmid, r, resources, signal);
      if (own.kind === 'ours') vm = own.vm;
    }
    if (vm === undefined) {
      const template = await this.#checkTemplate(plan, resources, signal);
      vm = await this.#allocate(r, plan, resources, template, signal);
    } else {
      const status = await api.vmStatus(vm, signal);
      if (status.status === 'running') {
        this.#log.debug(
          { vmid: vm.vmid, name: r.name, node: vm.node },
          'proxmox vm adopted running',
        );
        return formatId({ vmid: vm.vmid, name: r.name });
      }
    }
    await this.#provision(r, plan, vm, signal);
    this.#log.debug(
      { vmid: vm.vmid, name: r.name, node: vm.node, cloudInitBytes: r.cloudInit.byteLength },
      'proxmox vm ensured running',
    );
    return formatId({ vmid: vm.vmid, name: r.name });
  }

  /**
   * Finds and checks the template before any clone: it must be a template,
   * carry no cloud-init drive, and have what the config and resize steps
   * will need, so nothing fails on the clone that fixing the template
   * could have prevented.
   */
  async #checkTemplate(
    plan: Plan,
    resources: readonly ResourceEntry[],
    signal?: AbortSignal,
  ): Promise<{ readonly node: string; readonly config: VmConfig }> {
    const where = `template ${plan.templateVmid} (placement.image "${plan.imageKey}")`;
    const entry = resources.find((e) => e.vmid === plan.templateVmid && e.type === 'qemu');
    if (entry === undefined) throw permanent(this.name, 'create', `${where} does not exist`);
    const config = await this.#api.vmConfig({ node: entry.node, vmid: entry.vmid }, signal);
    if (config.template !== '1') {
      throw permanent(this.name, 'create', `${where} is not a template (convert it first)`);
    }
    const drives = cloudInitDrives(config);
    if (drives.length > 0) {
      throw permanent(
        this.name,
        'create',
        `${where} has a Proxmox cloud-init drive on ${drives.join(', ')}, which would compete with the seed; remove it`,
      );
    }
    const c = this.#config;
    if ((c.bridge !== undefined || c.vlanTag !== undefined) && config.net0 === undefined) {
      throw permanent(
        this.name,
        'create',
        `${where} has no net0, but proxmox.bridge or proxmox.vlanTag is set`,
      );
    }
    if (plan.machineType.diskGiB !== undefined) {
      const disk = bootDisk(config);
      if (disk === undefined || diskSizeBytes(config[disk]) === undefined) {
        throw permanent(
          this.name,
          'create',
          `${where} has no boot disk with a readable size, but machine type "${plan.machineTypeKey}" sets diskGiB`,
        );
      }
    }
    return { node: entry.node, config };
  }

  /** Probes VMIDs from the UID's hash until one is ours or free, and clones onto a free one. */
  async #allocate(
    r: CheckedCreateRequest,
    plan: Plan,
    resources: readonly ResourceEntry[],
    template: { readonly node: string; readonly config: VmConfig },
    signal?: AbortSignal,
  ): Promise<OurVm> {
    const range = this.#config.vmidRange;
    const templateNode = template.node;
    for (let attempt = 0; attempt < MAX_PROBES; attempt++) {
      const vmid = vmidFor(r.uid, attempt, range);
      const entry = resources.find((e) => e.vmid === vmid);
      if (entry === undefined) {
        let upid: string;
        try {
          upid = await this.#api.clone(
            {
              node: templateNode,
              vmid: plan.templateVmid,
              newid: vmid,
              name: r.name,
              description: formatDescription({
                uid: r.uid,
                createdAt: this.#clock.now(),
                installation: r.installation,
              }),
              ...(this.#config.storage === undefined ? {} : { storage: this.#config.storage }),
              ...(templateNode === plan.node ? {} : { target: plan.node }),
            },
            signal,
          );
        } catch (err) {
          if (!isConfigExists(err)) throw err;
          // Taken between the listing and the clone: judge who took it.
          const own = await this.#ownership(vmid, r, undefined, signal);
          if (own.kind === 'ours') return own.vm;
          continue;
        }
        await this.#waitTask(templateNode, upid, this.#budgets.clone, 'clone', signal);
        // The clone copies the template's config: no need to read it back.
        return { node: plan.node, vmid, config: template.config };
      }
      const own = await this.#ownership(vmid, r, resources, signal);
      if (own.kind === 'ours') return own.vm;
    }
    throw transient(
      this.name,
      'create',
      `no free VMID for ${r.name} after ${MAX_PROBES} probes in proxmox.vmidRange ${range.min}-${range.max}`,
    );
  }

  /**
   * The ownership check on a VMID: waits out a clone in progress (a locked
   * or nameless entry), then reads the config and judges the mark.
   */
  async #ownership(
    vmid: number,
    r: CheckedCreateRequest,
    listing: readonly ResourceEntry[] | undefined,
    signal?: AbortSignal,
  ): Promise<Ownership> {
    const deadline = Date.now() + this.#budgets.clone;
    let resources = listing ?? (await this.#api.clusterResources(signal));
    for (;;) {
      const entry = resources.find((e) => e.vmid === vmid);
      if (entry === undefined || entry.type !== 'qemu' || entry.template === 1) {
        return { kind: 'foreign' };
      }
      if (entry.name !== undefined && entry.name !== r.name) return { kind: 'foreign' };
      let waitFor: string | undefined;
      if (entry.lock !== undefined && entry.lock !== '' && entry.lock !== 'suspended') {
        waitFor = entry.lock;
      } else if (entry.name === undefined) waitFor = 'clone';
      let config: VmConfig | undefined;
      if (waitFor === undefined) {
        try {
          config = await this.#api.vmConfig({ node: entry.node, vmid }, signal);
        } catch (err) {
          if (isDoesNotExist(err)) return { kind: 'foreign' };
          throw err;
        }
        if (config.lock !== undefined && config.lock !== '' && config.lock !== 'suspended') {
          waitFor = config.lock;
        }
      }
      if (waitFor === undefined && config !== undefined) {
        if (config.name !== r.name) return { kind: 'foreign' };
        const mark = parseDescription(config.description);
        const problem = adoptionProblem(mark, { uid: r.uid, installation: r.installation });
        if (problem !== undefined) {
          throw permanent(
            this.name,
            'create',
            `VM ${vmid} is named ${r.name} but ${problem} (requested UID ${r.uid}); the operator never takes over a VM it did not create: rename or remove it`,
          );
        }
        if (entry.lock === 'suspended' || config.lock === 'suspended') {
          throw permanent(
            this.name,
            'create',
            `VM ${vmid} (${r.name}) is hibernated; resume or destroy it`,
          );
        }
        this.#log.debug({ vmid, name: r.name, node: entry.node }, 'proxmox vm adopted');
        return { kind: 'ours', vm: { node: entry.node, vmid, config } };
      }
      if (Date.now() >= deadline) {
        throw transient(
          this.name,
          'create',
          `VM ${vmid} stayed locked (${waitFor ?? 'clone'}) for ${Math.round(this.#budgets.clone / 1000)} s; if no task holds it, clear it with qm unlock ${vmid}`,
        );
      }
      await sleep(this.#budgets.poll, signal, this.name, 'create');
      resources = await this.#api.clusterResources(signal);
    }
  }

  /** Steps 5 to 9: seed, config, resize, start, running wait. Each repeats safely. */
  async #provision(
    r: CheckedCreateRequest,
    plan: Plan,
    vm: OurVm,
    signal?: AbortSignal,
  ): Promise<void> {
    const api = this.#api;
    const c = this.#config;
    const filename = seedName(r.name);
    let iso: Uint8Array;
    try {
      iso = buildSeedISO({
        instanceId: r.name,
        hostname: r.name,
        userData: r.cloudInit,
        ...(c.vendorData === undefined ? {} : { vendorData: c.vendorData }),
        installGuestAgent: c.installGuestAgent,
      });
    } catch (err) {
      if (err instanceof NoCloudError) {
        throw permanent(this.name, 'create', `the seed ISO cannot be built: ${err.code}`, err);
      }
      throw err;
    }
    const upload = await api.uploadIso(
      { node: vm.node, storage: c.isoStorage, filename, data: iso },
      signal,
    );
    await this.#waitTask(vm.node, upload, this.#budgets.upload, 'create', signal);

    const params: Record<string, string> = {
      cores: String(plan.machineType.cores),
      memory: String(plan.machineType.memoryMiB),
      agent: '1',
      tags: PROXY_TAG,
      ide2: `${c.isoStorage}:iso/${filename},media=cdrom`,
    };
    const net0 = vm.config.net0;
    if ((c.bridge !== undefined || c.vlanTag !== undefined) && net0 !== undefined) {
      params.net0 = rewriteNet0(net0, { bridge: c.bridge, vlanTag: c.vlanTag });
    }
    await api.setVmConfig({ node: vm.node, vmid: vm.vmid, params }, signal);

    const diskGiB = plan.machineType.diskGiB;
    if (diskGiB !== undefined) {
      const disk = bootDisk(vm.config);
      const size = disk === undefined ? undefined : diskSizeBytes(vm.config[disk]);
      if (disk === undefined || size === undefined) {
        throw permanent(
          this.name,
          'create',
          `VM ${vm.vmid} has no boot disk with a readable size, but machine type "${plan.machineTypeKey}" sets diskGiB`,
        );
      }
      if (diskGiB * 2 ** 30 > size) {
        const upid = await api.resize(
          { node: vm.node, vmid: vm.vmid, disk, size: `${diskGiB}G` },
          signal,
        );
        await this.#waitTask(vm.node, upid, this.#budgets.resize, 'create', signal);
      }
    }

    const start = await api.start({ node: vm.node, vmid: vm.vmid }, signal);
    await this.#waitTask(vm.node, start, this.#budgets.start, 'create', signal);

    const deadline = Date.now() + this.#budgets.running;
    for (;;) {
      const st = await api.vmStatus({ node: vm.node, vmid: vm.vmid }, signal);
      if (st.status === 'running' && (st.qmpstatus ?? 'running') === 'running') return;
      if (st.status === 'stopped') {
        throw transient(this.name, 'create', `VM ${vm.vmid} stopped right after its start`);
      }
      if (Date.now() >= deadline) {
        throw transient(
          this.name,
          'create',
          `VM ${vm.vmid} was not running ${Math.round(this.#budgets.running / 1000)} s after its start (status ${st.status}, qmpstatus ${st.qmpstatus ?? 'none'})`,
        );
      }
      await sleep(this.#budgets.poll, signal, this.name, 'create');
    }
  }

  /**
   * Polls a task until it stops. `OK` and `WARNINGS: n` are success; any
   * other exit status is a {@link TaskFailedError}; running past `budgetMs`
   * is a {@link TaskTimeoutError}. The node comes from the UPID.
   */
  async #waitTask(
    node: string,
    upid: string,
    budgetMs: number,
    op: Operation,
    signal?: AbortSignal,
  ): Promise<void> {
    const taskNode = /^UPID:([^:]+):/.exec(upid)?.[1] ?? node;
    const deadline = Date.now() + budgetMs;
    for (;;) {
      const st = await this.#api.taskStatus({ node: taskNode, upid }, signal);
      if (st.status === 'stopped') {
        const exit = st.exitstatus ?? '';
        if (exit === 'OK') return;
        if (/^WARNINGS: \d+$/.test(exit)) {
          this.#log.debug({ upid, exitstatus: exit }, 'proxmox task finished with warnings');
          return;
        }
        this.#log.debug({ upid, exitstatus: exit }, 'proxmox task failed');
        throw new TaskFailedError(upid, exit);
      }
      if (Date.now() >= deadline) throw new TaskTimeoutError(upid, budgetMs);
      await sleep(this.#budgets.poll, signal, this.name, op);
    }
  }

  // ------------------------------------------------------------------- get

  /** Reads the VM's state, IP, UID and creation time from Proxmox. */
  async get(id: string, opts?: CallOptions): Promise<Instance> {
    const ref = parseId(this.name, 'get', id);
    const signal = opts?.signal;
    throwIfAborted(signal, this.name, 'get');
    try {
      return await this.#get(id, ref.vmid, ref.name, signal);
    } catch (err) {
      throw this.#fail('get', err, signal);
    }
  }

  async #get(id: string, vmid: number, name: string, signal?: AbortSignal): Promise<Instance> {
    const api = this.#api;
    const entry = (await api.clusterResources(signal)).find((e) => e.vmid === vmid);
    if (entry === undefined || entry.type !== 'qemu') {
      throw notFound(this.name, 'get', `VM ${vmid} does not exist`);
    }
    const locked = (l: string | undefined) => l !== undefined && l !== '' && l !== 'suspended';
    if (locked(entry.lock) || entry.name === undefined) {
      throw transient(this.name, 'get', `VM ${vmid} is locked (${entry.lock ?? 'clone'})`);
    }
    if (entry.status === 'unknown') {
      throw transient(
        this.name,
        'get',
        `VM ${vmid} has status unknown (its node ${entry.node} does not answer)`,
      );
    }
    let config: VmConfig;
    try {
      config = await api.vmConfig({ node: entry.node, vmid }, signal);
    } catch (err) {
      if (isDoesNotExist(err)) throw notFound(this.name, 'get', `VM ${vmid} does not exist`, err);
      throw err;
    }
    if (locked(config.lock)) {
      throw transient(this.name, 'get', `VM ${vmid} is locked (${config.lock})`);
    }
    const fields = { vmid, name, node: entry.node };
    if (config.name !== name) {
      this.#log.debug({ ...fields, found: config.name }, 'proxmox vmid reused by another vm');
      throw notFound(this.name, 'get', `VM ${vmid} is no longer ${name}`);
    }
    const mark = parseDescription(config.description);
    if (mark === undefined) {
      this.#log.debug(fields, 'proxmox vm carries no mark');
      throw notFound(this.name, 'get', `VM ${vmid} (${name}) carries no proxy-op mark`);
    }
    const base = {
      id,
      uid: mark.uid,
      createdAt: mark.createdAt,
      installation: mark.installation,
    };
    if (entry.lock === 'suspended' || config.lock === 'suspended') {
      return { ...base, state: 'Stopped' };
    }
    const st = await api.vmStatus({ node: entry.node, vmid }, signal);
    const state = mapStatus(st.status, st.qmpstatus);
    if (state !== 'agent') return { ...base, state };
    const agent = await this.#agentAddress(entry.node, vmid, signal);
    this.#log.trace({ ...fields, ip: agent.ip ?? '' }, 'proxmox agent answered');
    return agent.ip === undefined
      ? { ...base, state: agent.state }
      : { ...base, state: agent.state, ip: agent.ip };
  }

  /** Reads the guest agent: Running with a routable IPv4, else what its answer means (README, Behaviour). */
  async #agentAddress(
    node: string,
    vmid: number,
    signal?: AbortSignal,
  ): Promise<{ state: State; ip?: string }> {
    try {
      const ifaces = await this.#api.agentNetworkInterfaces({ node, vmid }, signal);
      const ip = firstRoutableIPv4(ifaces);
      return ip === undefined ? { state: 'Provisioning' } : { state: 'Running', ip };
    } catch (err) {
      if (err instanceof ApiError && err.status === 500) {
        if (err.apiMessage === AGENT_NOT_RUNNING) return { state: 'Provisioning' };
        if (err.apiMessage === AGENT_NOT_CONFIGURED) return { state: 'Stopped' };
      }
      throw err;
    }
  }

  // ---------------------------------------------------------------- delete

  /** Stops and destroys the VM and deletes its seed; resolves once all is gone. */
  async delete(id: string, opts?: CallOptions): Promise<void> {
    const ref = parseId(this.name, 'delete', id);
    const signal = opts?.signal;
    throwIfAborted(signal, this.name, 'delete');
    try {
      await this.#lock.run(ref.name, () => this.#delete(ref.vmid, ref.name, signal), { signal });
    } catch (err) {
      throw this.#fail('delete', err, signal);
    }
  }

  async #delete(vmid: number, name: string, signal?: AbortSignal): Promise<void> {
    const api = this.#api;
    const fields = { vmid, name };
    const entry = (await api.clusterResources(signal)).find((e) => e.vmid === vmid);
    if (entry === undefined || entry.type !== 'qemu' || entry.template === 1) {
      this.#log.debug(fields, 'proxmox vm already gone');
      await this.#deleteSeedEverywhere(name, signal);
      return;
    }
    const suspended = entry.lock === 'suspended';
    if ((entry.lock !== undefined && entry.lock !== '' && !suspended) || entry.name === undefined) {
      throw transient(
        this.name,
        'delete',
        `VM ${vmid} is locked (${entry.lock ?? 'clone'}); retry once its task ends`,
      );
    }
    if (entry.status === 'unknown') {
      throw transient(this.name, 'delete', `VM ${vmid}'s node ${entry.node} does not answer`);
    }
    const node = entry.node;
    let config: VmConfig;
    try {
      config = await api.vmConfig({ node, vmid }, signal);
    } catch (err) {
      if (!isDoesNotExist(err)) throw err;
      this.#log.debug(fields, 'proxmox vm already gone');
      await this.#deleteSeedEverywhere(name, signal);
      return;
    }
    if (config.name !== name || parseDescription(config.description) === undefined) {
      this.#log.debug({ ...fields, node, found: config.name }, 'proxmox vm not ours, left alone');
      await this.#deleteSeedEverywhere(name, signal);
      return;
    }
    if (config.lock !== undefined && config.lock !== '' && config.lock !== 'suspended') {
      throw transient(
        this.name,
        'delete',
        `VM ${vmid} is locked (${config.lock}); retry once its task ends`,
      );
    }
    if (entry.status !== 'stopped' && !suspended) {
      let upid: string | undefined;
      try {
        upid = await api.stop({ node, vmid }, signal);
      } catch (err) {
        if (!isDoesNotExist(err)) throw err;
      }
      if (upid === undefined) {
        await this.#deleteSeedEverywhere(name, signal);
        return;
      }
      await this.#waitTask(node, upid, this.#budgets.stop, 'delete', signal);
    }
    const c = this.#config;
    const seed = await api.deleteVolume(
      { node, storage: c.isoStorage, volid: seedVolid(c.isoStorage, name) },
      signal,
    );
    await this.#waitTask(node, seed, this.#budgets.seedDelete, 'delete', signal);
    let destroy: string | undefined;
    try {
      destroy = await api.destroy({ node, vmid }, signal);
    } catch (err) {
      if (!isDoesNotExist(err)) throw err;
    }
    if (destroy !== undefined) {
      await this.#waitTask(node, destroy, this.#budgets.destroy, 'delete', signal);
    }
    this.#log.debug({ ...fields, node, destroyed: destroy !== undefined }, 'proxmox vm deleted');
  }

  /** Deletes the seed on every configured node, in config order (its VM's node is unknown). */
  async #deleteSeedEverywhere(name: string, signal?: AbortSignal): Promise<void> {
    const c = this.#config;
    for (const node of c.nodes) {
      try {
        const upid = await this.#api.deleteVolume(
          { node, storage: c.isoStorage, volid: seedVolid(c.isoStorage, name) },
          signal,
        );
        await this.#waitTask(node, upid, this.#budgets.seedDelete, 'delete', signal);
      } catch (err) {
        if (signal?.aborted || classify('delete', err) === 'Permanent') throw err;
        this.#log.debug(
          { node, name, ...errorFields(err) },
          'proxmox seed delete skipped on a node',
        );
      }
    }
  }

  // -------------------------------------------------------------- listByTag

  /** Lists the installation's VMs with ID, UID and creation time. */
  async listByTag(opts?: ListOptions): Promise<Instance[]> {
    const installation = listInstallation(this.name, opts);
    const signal = opts?.signal;
    throwIfAborted(signal, this.name, 'list');
    try {
      return await this.#list(installation, signal);
    } catch (err) {
      throw this.#fail('list', err, signal);
    }
  }

  async #list(installation: string, signal?: AbortSignal): Promise<Instance[]> {
    const resources = await this.#api.clusterResources(signal);
    const candidates = resources.filter(
      (e) =>
        e.type === 'qemu' &&
        e.template !== 1 &&
        e.name !== undefined &&
        (hasProxyTag(e.tags) || e.name.startsWith('proxy-')),
    );
    const out: Instance[] = [];
    let unmarked = 0;
    for (const e of candidates) {
      let config: VmConfig;
      try {
        config = await this.#api.vmConfig({ node: e.node, vmid: e.vmid }, signal);
      } catch (err) {
        if (signal?.aborted) throw err;
        this.#log.debug(
          { vmid: e.vmid, node: e.node, ...errorFields(err) },
          'proxmox unreadable candidate skipped',
        );
        continue;
      }
      const mark: Mark | undefined = parseDescription(config.description);
      if (mark === undefined) {
        unmarked++;
        continue;
      }
      if (!belongsTo(mark, installation)) continue;
      out.push({
        id: formatId({ vmid: e.vmid, name: config.name ?? (e.name as string) }),
        uid: mark.uid,
        createdAt: mark.createdAt,
        installation: mark.installation,
      });
    }
    this.#log.debug(
      { candidates: candidates.length, listed: out.length, unmarked },
      'proxmox vms listed',
    );
    return out;
  }

  // ---------------------------------------------------------------- checker

  /**
   * Checks every configured node, concurrently, answering in config order:
   * the version, the node's status, the seed storage and the templates.
   */
  async check(opts?: CallOptions): Promise<TargetResult[]> {
    const signal = opts?.signal;
    const c = this.#config;
    const details = c.nodes.map(
      (): Record<string, string | number | boolean> => ({
        isoStorage: c.isoStorage,
        templates: `0/${Object.keys(c.templates).length}`,
      }),
    );
    const timeout = (i: number): TargetResult => ({
      target: c.nodes[i] as string,
      address: c.url,
      ready: false,
      reason: Reason.Timeout,
      message: 'the check ran out of time',
      details: { ...details[i] },
    });
    if (signal?.aborted) return c.nodes.map((_n, i) => timeout(i));
    const round = new AbortController();
    const onAbort = () => round.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const aborted = new Promise<'aborted'>((resolve) => {
        if (round.signal.aborted) resolve('aborted');
        round.signal.addEventListener('abort', () => resolve('aborted'), { once: true });
      });
      return await Promise.all(
        c.nodes.map(async (node, i) => {
          const d = details[i] as Record<string, string | number | boolean>;
          const r = await Promise.race([this.#checkNode(node, d, round.signal), aborted]);
          return r === 'aborted' ? timeout(i) : r;
        }),
      );
    } finally {
      signal?.removeEventListener('abort', onAbort);
      round.abort();
    }
  }

  async #checkNode(
    node: string,
    details: Record<string, string | number | boolean>,
    signal: AbortSignal,
  ): Promise<TargetResult> {
    const c = this.#config;
    const api = this.#api;
    const result = (reason: string, message: string): TargetResult => ({
      target: node,
      address: c.url,
      ready: reason === Reason.Reachable,
      reason,
      message,
      details: { ...details },
    });
    try {
      const token = await readToken(c.tokenFile);
      details.tokenID = token.id;
    } catch (err) {
      return result(ProxmoxReason.CredentialsUnavailable, (err as Error).message);
    }
    try {
      const version = await api.version(signal);
      details.pveVersion = version.version;
      const status = await api.nodeStatus({ node }, signal);
      if (status.kversion !== undefined) details.kernel = status.kversion;
      let storage: Awaited<ReturnType<ProxmoxApi['storageStatus']>>;
      try {
        storage = await api.storageStatus({ node, storage: c.isoStorage }, signal);
      } catch (err) {
        if (isNoSuchStorage(err) || (err instanceof ApiError && err.status === 500)) {
          return result(
            ProxmoxReason.StorageNotFound,
            `storage ${c.isoStorage} cannot be used on ${node}: ${(err as Error).message}`,
          );
        }
        throw err;
      }
      if (storage.avail !== undefined) {
        details.isoStorageAvailGiB = Math.round((storage.avail / 2 ** 30) * 10) / 10;
      }
      const content = (storage.content ?? '').split(',');
      if (storage.active === 0 || !content.includes('iso')) {
        return result(
          ProxmoxReason.StorageNotFound,
          `storage ${c.isoStorage} on ${node} is ${storage.active === 0 ? 'inactive' : 'not enabled for iso content'}`,
        );
      }
      const resources = await api.clusterResources(signal);
      const missing: string[] = [];
      let found = 0;
      for (const [key, t] of Object.entries(c.templates)) {
        const e = resources.find((r) => r.vmid === t.vmid && r.type === 'qemu');
        if (e?.template === 1) found++;
        else missing.push(`${key} (${t.vmid})`);
      }
      details.templates = `${found}/${Object.keys(c.templates).length}`;
      if (missing.length > 0) {
        return result(
          ProxmoxReason.TemplateNotFound,
          `templates missing or not templates: ${missing.join(', ')}`,
        );
      }
      return result(Reason.Reachable, `node ${node} answers`);
    } catch (err) {
      const reason = reasonFor(err, signal.aborted);
      return result(reason, err instanceof Error ? err.message : 'check failed');
    } finally {
      this.#log.debug({ node, ...details }, 'proxmox node checked');
    }
  }

  // ---------------------------------------------------------------- errors

  #fail(op: Operation, err: unknown, signal: AbortSignal | undefined): unknown {
    if (err instanceof TypeError) return err;
    if (signal?.aborted) return abortedError(this.name, op, signal);
    if (ProviderError.isInstance(err)) {
      return op === 'create' && err.errorClass === 'NotFound'
        ? transient(this.name, op, err.message, err)
        : err;
    }
    let cls = classify(op, err);
    if (op === 'create' && cls === 'NotFound') cls = 'Transient';
    const message = err instanceof Error ? err.message || err.name : 'unknown failure';
    return providerError(cls, { provider: this.name, op, message, cause: err });
  }
}

/**
 * Maps `status/current` to a state, or `agent` when the guest agent
 * decides: a running VM whose QEMU is running. `prelaunch` is
 * Provisioning; paused, suspended, errors and anything unknown are Stopped.
 */
export function mapStatus(status: string, qmpstatus: string | undefined): State | 'agent' {
  if (status === 'running') {
    if (qmpstatus === undefined || qmpstatus === 'running') return 'agent';
    if (qmpstatus === 'prelaunch') return 'Provisioning';
    return 'Stopped';
  }
  return 'Stopped';
}

/** The first IPv4 of the first interface, in the agent's order, that is not loopback, link-local or unspecified. */
export function firstRoutableIPv4(
  ifaces: readonly {
    name: string;
    'ip-addresses'?: readonly { 'ip-address-type': string; 'ip-address': string }[] | undefined;
  }[],
): string | undefined {
  for (const iface of ifaces) {
    if (iface.name === 'lo') continue;
    for (const a of iface['ip-addresses'] ?? []) {
      const ip = a['ip-address'];
      if (a['ip-address-type'] !== 'ipv4' || !isIPv4(ip)) continue;
      if (ip.startsWith('127.') || ip.startsWith('169.254.') || ip === '0.0.0.0') continue;
      return ip;
    }
  }
  return undefined;
}

/** The seed ISO's file name for an instance. */
export function seedName(name: string): string {
  return `${name}-seed.iso`;
}

/** The seed ISO's volume id on `storage`. */
export function seedVolid(storage: string, name: string): string {
  return `${storage}:iso/${seedName(name)}`;
}

function errorFields(err: unknown): Record<string, string | number> {
  if (err instanceof ApiError) return { httpStatus: err.status, error: err.apiMessage };
  return { error: err instanceof Error ? err.name : typeof err };
}
