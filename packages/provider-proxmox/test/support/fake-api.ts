// The seam fake: the provider's ProxmoxApi implemented directly over the
// in-memory PVE model, for unit tests without HTTP. Answers become the same
// ApiError the HTTPS client produces.
import { setTimeout as delay } from 'node:timers/promises';
import {
  type AgentInterface,
  ApiError,
  type CloneParams,
  type ProxmoxApi,
  type ResourceEntry,
  type StorageStatus,
  type TaskStatus,
  type VmConfig,
  type VmRef,
  type VmStatus,
} from '../../src/index.js';
import { PveError, type PveModel } from './pve-model.js';

export class FakeApi implements ProxmoxApi {
  /** One-shot failures by method name, thrown before the model is asked. */
  readonly failNext = new Map<string, unknown>();

  /** The token line this client presents, as the HTTPS client would read from its file. */
  token: string;

  constructor(readonly model: PveModel) {
    this.token = model.acceptedToken;
  }

  async #run<T>(
    call: string,
    node: string | undefined,
    signal: AbortSignal | undefined,
    fn: () => unknown,
  ): Promise<T> {
    signal?.throwIfAborted();
    const abort = new Promise<never>((_, reject) => {
      signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
    abort.catch(() => {});
    await Promise.race([this.model.enter(call), abort]);
    const ms = node === undefined ? 0 : (this.model.nodeDelay.get(node) ?? 0);
    if (ms > 0) await Promise.race([delay(ms), abort]);
    signal?.throwIfAborted();
    const injected = this.failNext.get(call);
    if (injected !== undefined) {
      this.failNext.delete(call);
      throw injected;
    }
    try {
      this.model.authenticate(this.token);
      return JSON.parse(JSON.stringify(fn() ?? null)) as T;
    } catch (err) {
      if (err instanceof PveError) {
        // A 401's body is never read; the reason phrase is all the client keeps.
        if (err.status === 401) throw new ApiError(401, 'authentication failure');
        throw new ApiError(err.status, err.message, err.errors);
      }
      throw err;
    }
  }

  version(signal?: AbortSignal) {
    return this.#run<{ version: string }>('version', undefined, signal, () => this.model.version());
  }
  nodeStatus(req: { node: string }, signal?: AbortSignal) {
    return this.#run<{ kversion?: string }>('nodeStatus', req.node, signal, () =>
      this.model.nodeStatus(req.node),
    );
  }
  storageStatus(
    req: { node: string; storage: string },
    signal?: AbortSignal,
  ): Promise<StorageStatus> {
    return this.#run<StorageStatus>('storageStatus', req.node, signal, () =>
      this.model.storageStatus(req.node, req.storage),
    );
  }
  clusterResources(signal?: AbortSignal): Promise<ResourceEntry[]> {
    return this.#run<ResourceEntry[]>('clusterResources', undefined, signal, () =>
      this.model.clusterResources(),
    );
  }
  async vmConfig(req: VmRef, signal?: AbortSignal): Promise<VmConfig> {
    const raw = await this.#run<Record<string, unknown>>('vmConfig', req.node, signal, () =>
      this.model.vmConfig(req.node, req.vmid),
    );
    return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, String(v)]));
  }
  async setVmConfig(
    req: VmRef & { params: Readonly<Record<string, string>> },
    signal?: AbortSignal,
  ) {
    await this.#run<null>('setVmConfig', req.node, signal, () =>
      this.model.setVmConfig(req.node, req.vmid, { ...req.params }),
    );
  }
  clone(req: CloneParams, signal?: AbortSignal): Promise<string> {
    const p: Record<string, string> = {
      newid: String(req.newid),
      name: req.name,
      description: req.description,
      full: '1',
    };
    if (req.storage !== undefined) p.storage = req.storage;
    if (req.target !== undefined) p.target = req.target;
    return this.#run<string>('clone', req.node, signal, () =>
      this.model.clone(req.node, req.vmid, p),
    );
  }
  resize(req: VmRef & { disk: string; size: string }, signal?: AbortSignal): Promise<string> {
    return this.#run<string>('resize', req.node, signal, () =>
      this.model.resize(req.node, req.vmid, req.disk, req.size),
    );
  }
  start(req: VmRef, signal?: AbortSignal): Promise<string> {
    return this.#run<string>('start', req.node, signal, () => this.model.start(req.node, req.vmid));
  }
  stop(req: VmRef, signal?: AbortSignal): Promise<string> {
    return this.#run<string>('stop', req.node, signal, () => this.model.stop(req.node, req.vmid));
  }
  vmStatus(req: VmRef, signal?: AbortSignal): Promise<VmStatus> {
    return this.#run<VmStatus>('vmStatus', req.node, signal, () =>
      this.model.vmStatus(req.node, req.vmid),
    );
  }
  destroy(req: VmRef, signal?: AbortSignal): Promise<string> {
    return this.#run<string>('destroy', req.node, signal, () =>
      this.model.destroy(req.node, req.vmid),
    );
  }
  taskStatus(req: { node: string; upid: string }, signal?: AbortSignal): Promise<TaskStatus> {
    return this.#run<TaskStatus>('taskStatus', req.node, signal, () =>
      this.model.taskStatus(req.node, req.upid),
    );
  }
  async agentNetworkInterfaces(req: VmRef, signal?: AbortSignal): Promise<AgentInterface[]> {
    const r = await this.#run<{ result: unknown[] }>(
      'agentNetworkInterfaces',
      req.node,
      signal,
      () => this.model.agentNetworkInterfaces(req.node, req.vmid),
    );
    return r.result as AgentInterface[];
  }
  uploadIso(
    req: { node: string; storage: string; filename: string; data: Uint8Array },
    signal?: AbortSignal,
  ): Promise<string> {
    return this.#run<string>('uploadIso', req.node, signal, () =>
      this.model.uploadIso(req.node, req.storage, 'iso', req.filename, req.data),
    );
  }
  deleteVolume(
    req: { node: string; storage: string; volid: string },
    signal?: AbortSignal,
  ): Promise<string> {
    return this.#run<string>('deleteVolume', req.node, signal, () =>
      this.model.deleteVolume(req.node, req.storage, req.volid),
    );
  }
}
