// The seam fake: the provider's ProxmoxApi implemented directly over the
// in-memory PVE model, for unit tests without HTTP. Failures become the same
// ApiError the HTTPS client produces, and answers are read by the same
// readers (src/answers.ts).
import { setTimeout as delay } from 'node:timers/promises';
import { abortable } from '@proxy-op/providertest';
import { readAnswer } from '../../src/answers.js';
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
} from '../../src/api.js';
import { type MalformedKind, PveError, type PveModel } from './pve-model.js';

type Method = keyof ProxmoxApi;
type Answer<M extends Method> = Awaited<ReturnType<ProxmoxApi[M]>>;

export class FakeApi implements ProxmoxApi {
  /** One-shot failures by method name, thrown before the model is asked. */
  readonly failNext = new Map<string, unknown>();

  /** The token line this client presents, as the HTTPS client would read from its file. */
  token: string;

  constructor(readonly model: PveModel) {
    this.token = model.acceptedToken;
  }

  /**
   * One call: it reaches the model at once (a held call waits at the
   * model's gate) and is carried out even when the caller gives up; the
   * caller's promise rejects with the signal's reason as soon as it fires.
   */
  #run<M extends Method>(
    call: M,
    node: string | undefined,
    signal: AbortSignal | undefined,
    fn: () => unknown,
  ): Promise<Answer<M>> {
    signal?.throwIfAborted();
    const token = this.token;
    const work = (async (): Promise<Answer<M>> => {
      const ticket = await this.model.enter(call);
      const ms = node === undefined ? 0 : (this.model.nodeDelay.get(node) ?? 0);
      if (ms > 0) await delay(ms);
      const injected = this.failNext.get(call);
      if (injected !== undefined) {
        this.failNext.delete(call);
        throw injected;
      }
      let data: unknown;
      try {
        this.model.authenticate(token);
        data = JSON.parse(JSON.stringify(fn() ?? null)) as unknown;
      } catch (err) {
        if (err instanceof PveError) {
          // A 401's body is never read; the reason phrase is all the client keeps.
          if (err.status === 401) throw new ApiError(401, 'authentication failure');
          throw new ApiError(err.status, err.message, err.errors);
        }
        throw err;
      }
      if (ticket.malformed !== undefined) data = malformed(ticket.malformed, data);
      return (readAnswer[call] as (d: unknown) => Answer<M>)(data);
    })();
    work.catch(() => {});
    return abortable(work, signal);
  }

  version(signal?: AbortSignal) {
    return this.#run('version', undefined, signal, () => this.model.version());
  }
  nodeStatus(req: { node: string }, signal?: AbortSignal) {
    return this.#run('nodeStatus', req.node, signal, () => this.model.nodeStatus(req.node));
  }
  storageStatus(
    req: { node: string; storage: string },
    signal?: AbortSignal,
  ): Promise<StorageStatus> {
    return this.#run('storageStatus', req.node, signal, () =>
      this.model.storageStatus(req.node, req.storage),
    );
  }
  clusterResources(signal?: AbortSignal): Promise<ResourceEntry[]> {
    return this.#run('clusterResources', undefined, signal, () => this.model.clusterResources());
  }
  vmConfig(req: VmRef, signal?: AbortSignal): Promise<VmConfig> {
    return this.#run('vmConfig', req.node, signal, () => this.model.vmConfig(req.node, req.vmid));
  }
  async setVmConfig(
    req: VmRef & { params: Readonly<Record<string, string>> },
    signal?: AbortSignal,
  ) {
    await this.#run('setVmConfig', req.node, signal, () =>
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
    return this.#run('clone', req.node, signal, () => this.model.clone(req.node, req.vmid, p));
  }
  resize(req: VmRef & { disk: string; size: string }, signal?: AbortSignal): Promise<string> {
    return this.#run('resize', req.node, signal, () =>
      this.model.resize(req.node, req.vmid, req.disk, req.size),
    );
  }
  start(req: VmRef, signal?: AbortSignal): Promise<string> {
    return this.#run('start', req.node, signal, () => this.model.start(req.node, req.vmid));
  }
  stop(req: VmRef, signal?: AbortSignal): Promise<string> {
    return this.#run('stop', req.node, signal, () => this.model.stop(req.node, req.vmid));
  }
  vmStatus(req: VmRef, signal?: AbortSignal): Promise<VmStatus> {
    return this.#run('vmStatus', req.node, signal, () => this.model.vmStatus(req.node, req.vmid));
  }
  destroy(req: VmRef, signal?: AbortSignal): Promise<string> {
    return this.#run('destroy', req.node, signal, () =>
      this.model.destroy(req.node, req.vmid, { unreferencedDisks: true }),
    );
  }
  taskStatus(req: { node: string; upid: string }, signal?: AbortSignal): Promise<TaskStatus> {
    return this.#run('taskStatus', req.node, signal, () =>
      this.model.taskStatus(req.node, req.upid),
    );
  }
  agentNetworkInterfaces(req: VmRef, signal?: AbortSignal): Promise<AgentInterface[]> {
    return this.#run('agentNetworkInterfaces', req.node, signal, () =>
      this.model.agentNetworkInterfaces(req.node, req.vmid),
    );
  }
  uploadIso(
    req: { node: string; storage: string; filename: string; data: Uint8Array },
    signal?: AbortSignal,
  ): Promise<string> {
    return this.#run('uploadIso', req.node, signal, () =>
      this.model.uploadIso(req.node, req.storage, 'iso', req.filename, req.data),
    );
  }
  deleteVolume(
    req: { node: string; storage: string; volid: string },
    signal?: AbortSignal,
  ): Promise<string> {
    return this.#run('deleteVolume', req.node, signal, () =>
      this.model.deleteVolume(req.node, req.storage, req.volid),
    );
  }
}

/**
 * What the HTTPS client makes of an unreadable answer: the `data` it would
 * read (null, the wrong container, none), or the SyntaxError of a body
 * that is not JSON. Where `null` is the normal answer, a body that is not JSON.
 */
function malformed(kind: MalformedKind, data: unknown): unknown {
  if (kind === 'not-json' || data === null) throw new SyntaxError('the answer is not JSON');
  if (kind === 'null-data') return null;
  if (kind === 'no-data') return undefined;
  return Array.isArray(data) ? {} : typeof data === 'object' ? [] : {};
}
