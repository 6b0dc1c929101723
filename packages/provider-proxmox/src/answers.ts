/**
 * Reading the `data` of an API answer, one reader per seam method. A reader
 * returns the typed value or throws a `TypeError` naming the method when
 * the answer has the wrong shape (`null`, `{}` where a list belongs, a
 * missing field): the operation shell turns that into a Transient
 * `PROVIDER_MALFORMED_ANSWER` error, so an unreadable answer is never taken
 * for "gone" or "empty". Every seam adapter applies them.
 *
 * @module
 */
import type {
  AgentInterface,
  ProxmoxApi,
  ResourceEntry,
  StorageStatus,
  TaskStatus,
  VmConfig,
  VmStatus,
} from './seam.js';

type Method = keyof ProxmoxApi;
type Answer<M extends Method> = Awaited<ReturnType<ProxmoxApi[M]>>;

function record(method: string, data: unknown): Record<string, unknown> {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new TypeError(`${method}: the answer is not an object`);
  }
  return data as Record<string, unknown>;
}

function list(method: string, data: unknown): unknown[] {
  if (!Array.isArray(data)) throw new TypeError(`${method}: the answer is not a list`);
  return data;
}

function text(method: string, field: string, value: unknown): string {
  if (typeof value !== 'string') throw new TypeError(`${method}: ${field} is not a string`);
  return value;
}

function upid(method: string): (data: unknown) => string {
  return (data) => {
    const s = text(method, 'the task id', data);
    if (!s.startsWith('UPID:')) throw new TypeError(`${method}: the answer is not a task id`);
    return s;
  };
}

function withStatus<T>(method: string): (data: unknown) => T {
  return (data) => {
    const r = record(method, data);
    text(method, 'status', r.status);
    return r as T;
  };
}

/** The reader of each seam method's answer. */
export const readAnswer: { readonly [M in Method]: (data: unknown) => Answer<M> } = {
  version: (data) => {
    const r = record('version', data);
    text('version', 'version', r.version);
    return r as Answer<'version'>;
  },
  nodeStatus: (data) => record('nodeStatus', data) as Answer<'nodeStatus'>,
  storageStatus: (data) => record('storageStatus', data) as StorageStatus,
  clusterResources: (data) =>
    list('clusterResources', data).map((e) => {
      const r = record('clusterResources', e);
      if (typeof r.vmid !== 'number') throw new TypeError('clusterResources: vmid is not a number');
      text('clusterResources', 'node', r.node);
      text('clusterResources', 'type', r.type);
      return r as unknown as ResourceEntry;
    }),
  vmConfig: (data) => {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(record('vmConfig', data))) {
      if (v !== null && v !== undefined) out[k] = String(v);
    }
    return out as VmConfig;
  },
  // A synchronous config write answers `null`; nothing in it is read.
  setVmConfig: () => undefined,
  clone: upid('clone'),
  resize: upid('resize'),
  start: upid('start'),
  stop: upid('stop'),
  vmStatus: withStatus<VmStatus>('vmStatus'),
  destroy: upid('destroy'),
  taskStatus: withStatus<TaskStatus>('taskStatus'),
  agentNetworkInterfaces: (data) =>
    list(
      'agentNetworkInterfaces',
      record('agentNetworkInterfaces', data).result,
    ) as AgentInterface[],
  agentExec: (data) => {
    const pid = record('agentExec', data).pid;
    if (typeof pid !== 'number') throw new TypeError('agentExec: pid is not a number');
    return { pid };
  },
  // qemu-server answers the agent's booleans as 1 and 0, and stderr decoded.
  agentExecStatus: (data) => {
    const r = record('agentExecStatus', data);
    if (typeof r.exited !== 'number' && typeof r.exited !== 'boolean') {
      throw new TypeError('agentExecStatus: exited is missing');
    }
    return {
      exited: r.exited === 1 || r.exited === true,
      exitcode: typeof r.exitcode === 'number' ? r.exitcode : undefined,
      'err-data': typeof r['err-data'] === 'string' ? r['err-data'] : undefined,
    };
  },
  // file-write answers `null`.
  agentFileWrite: () => undefined,
  uploadIso: upid('uploadIso'),
  deleteVolume: upid('deleteVolume'),
};
