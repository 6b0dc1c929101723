// The seam fake: the provider's ProxmoxApi over the in-memory PVE model,
// for unit tests without HTTP. Each method makes the request the HTTPS
// client makes (method, path, parameters) and has it served by the same API
// table (pve-api.ts) the HTTPS fake uses; a failure becomes the ApiError the
// client's own parser makes of pveproxy's answer, and an answer is read by
// the client's readers (src/answers.ts).
import { setTimeout as delay } from 'node:timers/promises';
import { abortable } from '@proxy-op/providertest';
import { readAnswer } from '../../src/answers.js';
import { apiErrorFrom } from '../../src/client.js';
import type {
  AgentExecStatus,
  AgentInterface,
  CloneParams,
  ProxmoxApi,
  ResourceEntry,
  StorageStatus,
  TaskStatus,
  VmConfig,
  VmRef,
  VmStatus,
} from '../../src/seam.js';
import { errorAnswer, serve } from './pve-api.js';
import { type MalformedKind, PveError, type PveModel } from './pve-model.js';

type Method = keyof ProxmoxApi;
type Answer<M extends Method> = Awaited<ReturnType<ProxmoxApi[M]>>;
type Params = Record<string, string | readonly string[]>;

const seg = encodeURIComponent;
const vmPath = (r: VmRef) => `/nodes/${seg(r.node)}/qemu/${String(r.vmid)}`;

export class FakeApi implements ProxmoxApi {
  /** One-shot failures by method name, thrown before the model is asked. */
  readonly failNext = new Map<string, unknown>();

  /** The token line this client presents, as the HTTPS client would read from its file. */
  token: string;

  constructor(readonly model: PveModel) {
    this.token = model.acceptedToken;
  }

  /**
   * One request: it reaches the model at once (a held call waits at the
   * model's gate) and is carried out even when the caller gives up; the
   * caller's promise rejects with the signal's reason as soon as it fires.
   */
  #run<M extends Method>(
    call: M,
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    signal: AbortSignal | undefined,
    opts: { query?: Params; body?: Params; file?: { name: string; data: Uint8Array } } = {},
  ): Promise<Answer<M>> {
    signal?.throwIfAborted();
    const token = this.token;
    const query = new URLSearchParams(opts.query as Record<string, string> | undefined).toString();
    const line = `${method} /api2/json${path}${query === '' ? '' : `?${query}`}`;
    const work = (async (): Promise<Answer<M>> => {
      const ticket = await this.model.enter(call, line);
      const node = /^\/nodes\/([^/]+)\//.exec(path)?.[1];
      const ms = node === undefined ? 0 : (this.model.nodeDelay.get(decodeURIComponent(node)) ?? 0);
      if (ms > 0) await delay(ms);
      const injected = this.failNext.get(call);
      if (injected !== undefined) {
        this.failNext.delete(call);
        throw injected;
      }
      let data: unknown;
      try {
        const relPath = path
          .split('/')
          .map((c) => decodeURIComponent(c))
          .join('/');
        data = JSON.parse(
          JSON.stringify(
            (await serve(this.model, {
              method,
              relPath,
              params: { ...opts.body, ...opts.query },
              file: opts.file,
              token,
            })) ?? null,
          ),
        ) as unknown;
      } catch (err) {
        if (err instanceof PveError) {
          const a = errorAnswer(err);
          throw apiErrorFrom(a.status, a.reason, a.body);
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
    return this.#run('version', 'GET', '/version', signal);
  }
  nodeStatus(req: { node: string }, signal?: AbortSignal) {
    return this.#run('nodeStatus', 'GET', `/nodes/${seg(req.node)}/status`, signal);
  }
  storageStatus(
    req: { node: string; storage: string },
    signal?: AbortSignal,
  ): Promise<StorageStatus> {
    return this.#run(
      'storageStatus',
      'GET',
      `/nodes/${seg(req.node)}/storage/${seg(req.storage)}/status`,
      signal,
    );
  }
  clusterResources(signal?: AbortSignal): Promise<ResourceEntry[]> {
    return this.#run('clusterResources', 'GET', '/cluster/resources', signal, {
      query: { type: 'vm' },
    });
  }
  vmConfig(req: VmRef, signal?: AbortSignal): Promise<VmConfig> {
    return this.#run('vmConfig', 'GET', `${vmPath(req)}/config`, signal);
  }
  async setVmConfig(
    req: VmRef & { params: Readonly<Record<string, string>> },
    signal?: AbortSignal,
  ) {
    await this.#run('setVmConfig', 'PUT', `${vmPath(req)}/config`, signal, {
      body: { ...req.params },
    });
  }
  clone(req: CloneParams, signal?: AbortSignal): Promise<string> {
    const body: Params = {
      newid: String(req.newid),
      name: req.name,
      description: req.description,
      full: '1',
    };
    if (req.storage !== undefined) body.storage = req.storage;
    if (req.target !== undefined) body.target = req.target;
    return this.#run('clone', 'POST', `${vmPath(req)}/clone`, signal, { body });
  }
  resize(req: VmRef & { disk: string; size: string }, signal?: AbortSignal): Promise<string> {
    return this.#run('resize', 'PUT', `${vmPath(req)}/resize`, signal, {
      body: { disk: req.disk, size: req.size },
    });
  }
  start(req: VmRef, signal?: AbortSignal): Promise<string> {
    return this.#run('start', 'POST', `${vmPath(req)}/status/start`, signal);
  }
  stop(req: VmRef, signal?: AbortSignal): Promise<string> {
    return this.#run('stop', 'POST', `${vmPath(req)}/status/stop`, signal);
  }
  vmStatus(req: VmRef, signal?: AbortSignal): Promise<VmStatus> {
    return this.#run('vmStatus', 'GET', `${vmPath(req)}/status/current`, signal);
  }
  destroy(req: VmRef, signal?: AbortSignal): Promise<string> {
    return this.#run('destroy', 'DELETE', vmPath(req), signal, {
      query: { purge: '1', 'destroy-unreferenced-disks': '1' },
    });
  }
  taskStatus(req: { node: string; upid: string }, signal?: AbortSignal): Promise<TaskStatus> {
    return this.#run(
      'taskStatus',
      'GET',
      `/nodes/${seg(req.node)}/tasks/${seg(req.upid)}/status`,
      signal,
    );
  }
  agentNetworkInterfaces(req: VmRef, signal?: AbortSignal): Promise<AgentInterface[]> {
    return this.#run(
      'agentNetworkInterfaces',
      'GET',
      `${vmPath(req)}/agent/network-get-interfaces`,
      signal,
    );
  }
  agentExec(
    req: VmRef & { command: readonly string[] },
    signal?: AbortSignal,
  ): Promise<{ pid: number }> {
    return this.#run('agentExec', 'POST', `${vmPath(req)}/agent/exec`, signal, {
      body: { command: req.command },
    });
  }
  agentExecStatus(req: VmRef & { pid: number }, signal?: AbortSignal): Promise<AgentExecStatus> {
    return this.#run('agentExecStatus', 'GET', `${vmPath(req)}/agent/exec-status`, signal, {
      query: { pid: String(req.pid) },
    });
  }
  async agentFileWrite(
    req: VmRef & { file: string; content: string; encode: boolean },
    signal?: AbortSignal,
  ): Promise<void> {
    await this.#run('agentFileWrite', 'POST', `${vmPath(req)}/agent/file-write`, signal, {
      body: { file: req.file, content: req.content, encode: req.encode ? '1' : '0' },
    });
  }
  uploadIso(
    req: { node: string; storage: string; filename: string; data: Uint8Array },
    signal?: AbortSignal,
  ): Promise<string> {
    return this.#run(
      'uploadIso',
      'POST',
      `/nodes/${seg(req.node)}/storage/${seg(req.storage)}/upload`,
      signal,
      {
        body: { content: 'iso', filename: req.filename },
        file: { name: req.filename, data: req.data },
      },
    );
  }
  deleteVolume(
    req: { node: string; storage: string; volid: string },
    signal?: AbortSignal,
  ): Promise<string> {
    return this.#run(
      'deleteVolume',
      'DELETE',
      `/nodes/${seg(req.node)}/storage/${seg(req.storage)}/content/${seg(req.volid)}`,
      signal,
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
