/**
 * The kubelet's Secret volumes for the harness's kubelet: a Pod's Secret
 * volumes written into host directories standing in for the container's
 * mount points, as the real kubelet does it (see `atomic-writer.ts`),
 * before the container starts (a missing Secret keeps it from starting),
 * then kept up to date once per sync period: a changed Secret reaches the
 * running container's files within one period, a deleted one leaves the
 * last version in place. The real kubelet's period is about a minute; tests
 * shorten it.
 *
 * Peers: the Kubernetes API test server (the Secrets as stored); the local
 * filesystem.
 *
 * @module
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeTestServer } from '@proxy-op/kube-testserver';
import { NOBODY } from '@proxy-op/testkit';
import { AtomicWriter, type PayloadFile } from './atomic-writer.js';

/** A Secret volume as a Pod spec has it. */
interface SecretVolumeSource {
  secretName?: string;
  defaultMode?: number;
  optional?: boolean;
  items?: { key: string; path: string; mode?: number }[];
}

/** What of a Pod the volumes need. */
export interface PodVolumesSpec {
  metadata: { name: string; namespace: string };
  spec?: {
    securityContext?: { fsGroup?: number };
    volumes?: { name: string; secret?: SecretVolumeSource }[];
    containers?: { volumeMounts?: { name: string; mountPath: string; subPath?: string }[] }[];
  };
}

/** One Secret volume of a running Pod: where the container sees it, where it is on the host. */
export interface MountedVolume {
  readonly volume: string;
  readonly mountPath: string;
  readonly hostDir: string;
}

interface PodMounts {
  readonly volumes: (MountedVolume & {
    readonly source: SecretVolumeSource;
    readonly writer: AtomicWriter;
  })[];
  readonly timer: NodeJS.Timeout;
  /** A sync in progress: the next tick waits for the one after. */
  syncing: boolean;
}

/** The Secret volumes of the Pods one kubelet runs. */
export class SecretVolumes {
  readonly #server: KubeTestServer;
  readonly #syncPeriodMs: number;
  readonly #pods = new Map<string, PodMounts>();
  #root: string | undefined;
  /** Called after each new version a sync put in place (not the first write). */
  onUpdated: ((namespace: string, name: string, volume: string) => void) | undefined;

  constructor(server: KubeTestServer, syncPeriodMs: number) {
    this.#server = server;
    this.#syncPeriodMs = syncPeriodMs;
  }

  #secret(namespace: string, name: string): Record<string, string> | undefined {
    const s = this.#server
      .objects('', 'secrets', namespace)
      .find((o) => (o.metadata as { name?: string }).name === name);
    return s === undefined ? undefined : ((s.data ?? {}) as Record<string, string>);
  }

  /** The files a volume holds for the Secret's data, as the kubelet projects them. */
  #payload(namespace: string, source: SecretVolumeSource): Record<string, PayloadFile> | undefined {
    const data = this.#secret(namespace, source.secretName ?? '');
    if (data === undefined) return undefined;
    const mode = source.defaultMode ?? 0o644;
    const out: Record<string, PayloadFile> = {};
    const items = source.items ?? Object.keys(data).map((key) => ({ key, path: key }));
    for (const item of items as { key: string; path: string; mode?: number }[]) {
      const value = data[item.key];
      if (value === undefined) {
        if (source.optional === true) continue;
        throw new Error(`Secret ${namespace}/${source.secretName} has no key ${item.key}`);
      }
      out[item.path] = { data: Buffer.from(value, 'base64'), mode: item.mode ?? mode };
    }
    return out;
  }

  /**
   * Writes the Pod's Secret volumes and starts keeping them up to date;
   * rejects, as the kubelet does not start a container, when a Secret a
   * volume needs is missing. Resolves with the mounts of the container.
   */
  async mount(pod: PodVolumesSpec): Promise<MountedVolume[]> {
    const { namespace, name } = pod.metadata;
    const key = `${namespace}/${name}`;
    await this.unmount(namespace, name);
    if (this.#root === undefined) {
      this.#root = await mkdtemp(join(tmpdir(), 'proxy-op-kubelet-'));
      await chmod(this.#root, 0o755);
    }
    const spec = pod.spec ?? {};
    // Running as root, the harness runs containers as nobody: the Pod's fsGroup stands for it.
    const group =
      spec.securityContext?.fsGroup === undefined || process.getuid?.() !== 0 ? undefined : NOBODY;
    const volumes: PodMounts['volumes'] = [];
    for (const v of spec.volumes ?? []) {
      if (v.secret === undefined) continue;
      for (const m of (spec.containers ?? []).flatMap((c) => c.volumeMounts ?? [])) {
        if (m.name !== v.name) continue;
        if (m.subPath !== undefined) throw new Error('subPath mounts are not modelled');
        const hostDir = join(this.#root, `${namespace}_${name}`, v.name);
        const writer = new AtomicWriter(hostDir, group);
        const payload = this.#payload(namespace, v.secret);
        if (payload === undefined) {
          throw new Error(
            `Pod ${key}: Secret ${v.secret.secretName} not found, so the container does not start`,
          );
        }
        await writer.write(payload);
        volumes.push({ volume: v.name, mountPath: m.mountPath, hostDir, source: v.secret, writer });
      }
    }
    const timer = setInterval(() => void this.#sync(namespace, name), this.#syncPeriodMs);
    timer.unref();
    this.#pods.set(key, { volumes, timer, syncing: false });
    return volumes.map(({ volume, mountPath, hostDir }) => ({ volume, mountPath, hostDir }));
  }

  async #sync(namespace: string, name: string): Promise<void> {
    const mounts = this.#pods.get(`${namespace}/${name}`);
    if (mounts === undefined || mounts.syncing) return;
    mounts.syncing = true;
    try {
      for (const v of mounts.volumes) {
        let payload: Record<string, PayloadFile> | undefined;
        try {
          payload = this.#payload(namespace, v.source);
        } catch {
          payload = undefined;
        }
        // A Secret gone or unreadable: the kubelet keeps the last version.
        if (payload === undefined) continue;
        if (await v.writer.write(payload).catch(() => false)) {
          this.onUpdated?.(namespace, name, v.volume);
        }
      }
    } finally {
      mounts.syncing = false;
    }
  }

  /** Stops keeping the Pod's volumes and removes them, as the container stopping does. */
  async unmount(namespace: string, name: string): Promise<void> {
    const key = `${namespace}/${name}`;
    const mounts = this.#pods.get(key);
    if (mounts === undefined) return;
    clearInterval(mounts.timer);
    this.#pods.delete(key);
    if (this.#root !== undefined) {
      await rm(join(this.#root, `${namespace}_${name}`), { recursive: true, force: true });
    }
  }

  /** Unmounts everything and removes the host directories. */
  async close(): Promise<void> {
    for (const key of [...this.#pods.keys()]) {
      const [ns = '', name = ''] = key.split('/');
      await this.unmount(ns, name);
    }
    if (this.#root !== undefined) await rm(this.#root, { recursive: true, force: true });
    this.#root = undefined;
  }
}
