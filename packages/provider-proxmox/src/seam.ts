/**
 * The seam between the provider and the Proxmox VE API: one method per
 * endpoint the provider calls, each taking an `AbortSignal` last. The
 * production adapter is {@link HttpProxmoxApi} in `client.ts`; tests put a
 * fake behind the same interface. Whichever seam the provider talks to, it
 * is decorated here once: the per-call budget and the one debug line (and,
 * over a seam of the caller's, the child span) per call.
 *
 * @module
 */
import { ProxyTracerProvider, type Tracer } from '@opentelemetry/api';
import { type Logger, observeSeam } from '@proxy-op/contract';
import { ApiError } from './errors.js';

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
  /**
   * `1` when the config the VM runs with enables the guest agent, absent
   * otherwise: that config, not one with pending changes applied, is what
   * QEMU was started with and what the agent calls check.
   */
  readonly agent?: number | undefined;
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

/** `agent/exec-status`: whether the program has exited, and how (stderr as text). */
export interface AgentExecStatus {
  readonly exited: boolean;
  readonly exitcode?: number | undefined;
  readonly 'err-data'?: string | undefined;
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
  /** `POST /nodes/{node}/qemu/{vmid}/agent/exec`: starts `command` (program and arguments) in the guest. */
  agentExec(
    req: VmRef & { command: readonly string[] },
    signal?: AbortSignal,
  ): Promise<{ pid: number }>;
  /** `GET /nodes/{node}/qemu/{vmid}/agent/exec-status?pid=`. */
  agentExecStatus(req: VmRef & { pid: number }, signal?: AbortSignal): Promise<AgentExecStatus>;
  /**
   * `POST /nodes/{node}/qemu/{vmid}/agent/file-write`: `content` (at most
   * 60 KiB; base64 when `encode` is false, which Proxmox then passes on as
   * it is) into `file`, truncating it (owner and mode kept).
   */
  agentFileWrite(
    req: VmRef & { file: string; content: string; encode: boolean },
    signal?: AbortSignal,
  ): Promise<void>;
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
  'agentExec',
  'agentExecStatus',
  'agentFileWrite',
  'uploadIso',
  'deleteVolume',
] as const satisfies readonly (keyof ProxmoxApi)[];

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
  'pid',
];

const METHODS: ReadonlySet<string> = new Set(API_METHODS);

// The HTTPS client makes the HTTP spans itself; over it the decorator is
// given a tracer that records nothing, so no call is traced twice.
const NO_SPANS = new ProxyTracerProvider().getTracer('@proxy-op/provider-proxmox/seam');

/** Options of {@link decorateApi}. */
export interface DecorateOptions {
  /** The configured provider name, on every line. */
  readonly provider: string;
  readonly logger: Logger;
  /** Every call's budget in ms, answer included (`requestTimeoutSeconds`); 0 for none. */
  readonly requestTimeoutMs: number;
  /**
   * Makes one `proxmox.<method>` child span per call. Give it only for a
   * seam that makes no spans of its own: the HTTPS client makes
   * `HTTP <METHOD>` spans.
   */
  readonly tracer?: Tracer | undefined;
}

/**
 * Wraps a seam: each call is bounded by `requestTimeoutMs` (the request
 * is aborted and the call rejects with the contract's `BudgetError`,
 * whatever the seam does) and logs one debug line with the call name, the
 * safe identifiers, the duration and, on failure, the HTTP status and the
 * API's message; with `tracer`, each call is also a child span.
 */
export function decorateApi(api: ProxmoxApi, options: DecorateOptions): ProxmoxApi {
  const ms = options.requestTimeoutMs;
  return observeSeam(api, {
    prefix: 'proxmox',
    provider: options.provider,
    logger: options.logger,
    tracer: options.tracer ?? NO_SPANS,
    budget: (method) => (ms > 0 && METHODS.has(method) ? ms : undefined),
    fields: (_method, args) => {
      const out: Record<string, string | number> = {};
      const first = args[0];
      if (typeof first === 'object' && first !== null && !(first instanceof AbortSignal)) {
        for (const key of SAFE_FIELDS) {
          const v = (first as Record<string, unknown>)[key];
          if (typeof v === 'string' || typeof v === 'number') out[key] = v;
        }
      }
      return out;
    },
    errorFields: (err) =>
      ApiError.isInstance(err)
        ? { error: err.name, httpStatus: err.status, apiMessage: err.apiMessage }
        : {
            error: err instanceof Error ? err.name : typeof err,
            ...(typeof (err as { code?: unknown })?.code === 'string'
              ? { errorCode: (err as { code: string }).code }
              : {}),
          },
  });
}
