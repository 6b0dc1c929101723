/**
 * The seam between the provider and the Proxmox VE API: one method per
 * endpoint the provider calls, each taking an `AbortSignal`. The production
 * adapter is {@link HttpProxmoxApi} in `client.ts`; tests put a fake behind
 * the same interface.
 *
 * @module
 */

/** One entry of `GET /cluster/resources?type=vm`. */
export interface ResourceEntry {
  /** `qemu` or `lxc`. */
  readonly type: string;
  readonly vmid: number;
  readonly node: string;
  /** Absent while a clone is in progress. */
  readonly name?: string | undefined;
  /** `running`, `stopped`, or `unknown` when the node does not answer. */
  readonly status: string;
  /** 1 for a template. */
  readonly template?: number | undefined;
  /** A task's lock (`clone`, `backup`, ...) or `suspended` for a hibernated VM. */
  readonly lock?: string | undefined;
  /** Tags separated by `;`. */
  readonly tags?: string | undefined;
}

/** `GET /nodes/{node}/qemu/{vmid}/status/current`, the fields the provider reads. */
export interface VmStatus {
  readonly status: string;
  readonly qmpstatus?: string | undefined;
  readonly lock?: string | undefined;
}

/** `GET /nodes/{node}/tasks/{upid}/status`. */
export interface TaskStatus {
  /** `running` or `stopped`. */
  readonly status: string;
  /** Set once stopped: `OK`, `WARNINGS: n`, or the failure's text. */
  readonly exitstatus?: string | undefined;
}

/** `GET /nodes/{node}/storage/{storage}/status`. */
export interface StorageStatus {
  readonly active?: number | undefined;
  readonly enabled?: number | undefined;
  /** Comma-separated content types, e.g. `iso,vztmpl`. */
  readonly content?: string | undefined;
  /** Free bytes. */
  readonly avail?: number | undefined;
  readonly total?: number | undefined;
}

/** One interface of the guest agent's `network-get-interfaces`. */
export interface AgentInterface {
  readonly name: string;
  readonly 'ip-addresses'?:
    | readonly { readonly 'ip-address-type': string; readonly 'ip-address': string }[]
    | undefined;
}

/** A VM's config, every value as a string. */
export type VmConfig = Readonly<Record<string, string>>;

/** Identifies a VM on a node. */
export interface VmRef {
  readonly node: string;
  readonly vmid: number;
}

/** The clone call's parameters. */
export interface CloneParams extends VmRef {
  readonly newid: number;
  readonly name: string;
  /** The description: the ownership mark. */
  readonly description: string;
  /** Clone disks onto this storage; the template's own when unset. */
  readonly storage?: string | undefined;
  /** The node the clone goes to, when not the template's. */
  readonly target?: string | undefined;
}

/** A task handle: the node that runs it and its UPID. */
export interface TaskRef {
  readonly node: string;
  readonly upid: string;
}

/**
 * The seam: one method per PVE endpoint. Every method takes a signal that
 * cancels that request alone. Failures are {@link ApiError}s for answers
 * from Proxmox, and transport errors otherwise.
 */
export interface ProxmoxApi {
  /** `GET /version`. */
  version(signal?: AbortSignal): Promise<{ version: string; release?: string | undefined }>;
  /** `GET /nodes/{node}/status`. */
  nodeStatus(
    req: { node: string },
    signal?: AbortSignal,
  ): Promise<{ kversion?: string | undefined; uptime?: number | undefined }>;
  /** `GET /nodes/{node}/storage/{storage}/status`. */
  storageStatus(
    req: { node: string; storage: string },
    signal?: AbortSignal,
  ): Promise<StorageStatus>;
  /** `GET /cluster/resources?type=vm`. */
  clusterResources(signal?: AbortSignal): Promise<ResourceEntry[]>;
  /** `GET /nodes/{node}/qemu/{vmid}/config`. */
  vmConfig(req: VmRef, signal?: AbortSignal): Promise<VmConfig>;
  /** `PUT /nodes/{node}/qemu/{vmid}/config` (synchronous). */
  setVmConfig(
    req: VmRef & { params: Readonly<Record<string, string>> },
    signal?: AbortSignal,
  ): Promise<void>;
  /** `POST /nodes/{node}/qemu/{vmid}/clone` (full clone); returns the task's UPID. */
  clone(req: CloneParams, signal?: AbortSignal): Promise<string>;
  /** `PUT /nodes/{node}/qemu/{vmid}/resize` to an absolute size such as `20G`; returns the UPID. */
  resize(req: VmRef & { disk: string; size: string }, signal?: AbortSignal): Promise<string>;
  /** `POST /nodes/{node}/qemu/{vmid}/status/start`; returns the UPID. */
  start(req: VmRef, signal?: AbortSignal): Promise<string>;
  /** `POST /nodes/{node}/qemu/{vmid}/status/stop`; returns the UPID. */
  stop(req: VmRef, signal?: AbortSignal): Promise<string>;
  /** `GET /nodes/{node}/qemu/{vmid}/status/current`. */
  vmStatus(req: VmRef, signal?: AbortSignal): Promise<VmStatus>;
  /** `DELETE /nodes/{node}/qemu/{vmid}?purge=1&destroy-unreferenced-disks=1`; returns the UPID. */
  destroy(req: VmRef, signal?: AbortSignal): Promise<string>;
  /** `GET /nodes/{node}/tasks/{upid}/status`. */
  taskStatus(req: TaskRef, signal?: AbortSignal): Promise<TaskStatus>;
  /** `GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces`. */
  agentNetworkInterfaces(req: VmRef, signal?: AbortSignal): Promise<AgentInterface[]>;
  /** `POST /nodes/{node}/storage/{storage}/upload` (multipart, `content=iso`); overwrites; returns the UPID. */
  uploadIso(
    req: { node: string; storage: string; filename: string; data: Uint8Array },
    signal?: AbortSignal,
  ): Promise<string>;
  /** `DELETE /nodes/{node}/storage/{storage}/content/{volid}`; returns the UPID. */
  deleteVolume(
    req: { node: string; storage: string; volid: string },
    signal?: AbortSignal,
  ): Promise<string>;
}

/** The seam's method names, in the order above. */
export const API_METHODS = [
  'version',
  'nodeStatus',
  'storageStatus',
  'clusterResources',
  'vmConfig',
  'setVmConfig',
  'clone',
  'resize',
  'start',
  'stop',
  'vmStatus',
  'destroy',
  'taskStatus',
  'agentNetworkInterfaces',
  'uploadIso',
  'deleteVolume',
] as const satisfies readonly (keyof ProxmoxApi)[];

/**
 * An answer from Proxmox other than 2xx: the status, the message (the
 * body's `message` without its trailing newline, or the reason phrase when
 * there is no body) and, for a 400, the per-parameter errors. It never
 * carries request headers or URLs, so no credential can reach it.
 */
export class ApiError extends Error {
  /** A stable code for this class of error. */
  readonly code = 'PROXMOX_API_ERROR';
  readonly status: number;
  /** Per-parameter errors of a 400 answer. */
  readonly errors: Readonly<Record<string, string>>;
  /** The message Proxmox gave, without the status. */
  readonly apiMessage: string;
  constructor(status: number, message: string, errors: Readonly<Record<string, string>> = {}) {
    const fieldErrors = Object.entries(errors)
      .map(([k, v]) => `${k}: ${v.trim()}`)
      .join('; ');
    super(`${status} ${message}${fieldErrors === '' ? '' : ` (${fieldErrors})`}`);
    this.status = status;
    this.errors = errors;
    this.apiMessage = message;
  }
  override get name(): string {
    return 'ApiError';
  }
}

/** A problem with the token file: missing (the Secret has not landed) or malformed. */
export class TokenFileError extends Error {
  readonly code: 'PROXMOX_TOKEN_MISSING' | 'PROXMOX_TOKEN_MALFORMED';
  constructor(code: 'PROXMOX_TOKEN_MISSING' | 'PROXMOX_TOKEN_MALFORMED', message: string) {
    super(message);
    this.code = code;
  }
  override get name(): string {
    return 'TokenFileError';
  }
}

/** A problem with the CA file: missing (Transient) or holding no certificate (Permanent). */
export class CaFileError extends Error {
  readonly code: 'PROXMOX_CA_MISSING' | 'PROXMOX_CA_INVALID';
  constructor(code: 'PROXMOX_CA_MISSING' | 'PROXMOX_CA_INVALID', message: string) {
    super(message);
    this.code = code;
  }
  override get name(): string {
    return 'CaFileError';
  }
}
