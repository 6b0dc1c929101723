/**
 * The harness's scheduler and kubelet: what the real cluster's controllers
 * do to a Pod, done through the API as they do it (the status subresource
 * for phase, IPs and conditions). The test server runs no controller, so
 * without this a Pod stays Pending forever and is deleted at once, as an
 * unscheduled Pod is.
 *
 * A scheduled Pod (bound to {@link NODE_NAME}) is deleted gracefully by the
 * test server, as by a real one: a delete leaves it terminating
 * (`deletionTimestamp` set, its grace period running) until
 * {@link Kubelet.settle} deletes it again with a grace period of 0, as the
 * kubelet does once the containers have stopped.
 *
 * {@link Kubelet.runSquid} runs a Pod's container for real: the Squid
 * configuration the Pod carries (its annotation, which the container
 * mounts) in a real Squid on a loopback address standing in for the Pod's
 * IP, so a client's traffic goes through what the provider rendered. The
 * Pod's Secret volumes are written to host directories first and kept up
 * to date once per sync period (`volumes.ts`), and the configuration's
 * paths under their mount points are pointed at those directories.
 *
 * Peers: the Kubernetes API test server; the real Squid (Debian `squid`);
 * the local filesystem.
 *
 * @module
 */
import type { KubeTestServer } from '@proxy-op/kube-testserver';
import { type RunningSquid, startSquid } from '@proxy-op/testkit';
import { SQUID_CONF_ANNOTATION } from '../../src/pod.js';
import { adminOk, podPath } from './admin.js';
import { type PodVolumesSpec, SecretVolumes } from './volumes.js';

/** The real kubelet's sync period (`syncFrequency`), within which a changed Secret is seen. */
export const KUBELET_SYNC_PERIOD_MS = 60_000;

/** Options of {@link Kubelet}. */
export interface KubeletOptions {
  /** How often a running Pod's Secret volumes are brought up to date; {@link KUBELET_SYNC_PERIOD_MS} by default. */
  readonly syncPeriodMs?: number | undefined;
}

/** The node every Pod is scheduled to. */
export const NODE_NAME = 'node-a';

const MERGE = 'application/merge-patch+json';

interface PodObject extends PodVolumesSpec {
  metadata: {
    name: string;
    namespace: string;
    deletionTimestamp?: string;
    finalizers?: string[];
    annotations?: Record<string, string>;
  };
  status?: { phase?: string; podIP?: string };
}

/** The kubelet of one test server. */
export class Kubelet {
  /** The Squids {@link runSquid} started, by `namespace/name`. */
  readonly #squids = new Map<string, RunningSquid>();

  /** The Secret volumes of the Pods whose Squid runs. */
  readonly volumes: SecretVolumes;

  constructor(
    readonly server: KubeTestServer,
    opts: KubeletOptions = {},
  ) {
    this.volumes = new SecretVolumes(server, opts.syncPeriodMs ?? KUBELET_SYNC_PERIOD_MS);
  }

  /**
   * Runs the Pod's container: its rendered Squid configuration in a real
   * Squid listening on `ip` (a loopback address, the Pod's network: the
   * configuration's `http_port N` becomes `http_port ip:N`, nothing else
   * changes), then reports the Pod Running at `ip`. Stopped by
   * {@link stopSquid}, {@link settle} once the Pod is deleted, or
   * {@link stopAll}.
   */
  async runSquid(namespace: string, name: string, ip: string): Promise<RunningSquid> {
    const pod = this.pod(namespace, name);
    let conf = pod?.metadata.annotations?.[SQUID_CONF_ANNOTATION];
    if (pod === undefined || conf === undefined)
      throw new Error(`Pod ${namespace}/${name} carries no Squid configuration`);
    const m = /^http_port (\d+)$/m.exec(conf);
    if (m === null)
      throw new Error(`the Squid configuration of ${namespace}/${name} has no http_port`);
    const port = Number(m[1]);
    // The container's view of its volumes: their mount points are the host directories.
    for (const v of await this.volumes.mount(pod)) {
      conf = conf.replaceAll(`${v.mountPath}/`, `${v.hostDir}/`);
    }
    let squid: RunningSquid;
    try {
      squid = await startSquid({
        host: ip,
        port,
        config: conf.replace(/^http_port \d+$/m, `http_port ${ip}:${port}`),
      });
    } catch (err) {
      await this.volumes.unmount(namespace, name);
      throw err;
    }
    this.#squids.set(`${namespace}/${name}`, squid);
    await this.run(namespace, name, ip);
    return squid;
  }

  /** Stops the Squid of the Pod, as its container stopping would. */
  async stopSquid(namespace: string, name: string): Promise<void> {
    const squid = this.#squids.get(`${namespace}/${name}`);
    this.#squids.delete(`${namespace}/${name}`);
    await squid?.stop();
    await this.volumes.unmount(namespace, name);
  }

  /** Stops every Squid this kubelet started. */
  async stopAll(): Promise<void> {
    await Promise.all(
      [...this.#squids.keys()].map((k) => {
        const [ns = '', name = ''] = k.split('/');
        return this.stopSquid(ns, name);
      }),
    );
    await this.volumes.close();
  }

  /** Every Pod the server stores, in every namespace. */
  pods(): PodObject[] {
    return this.server.objects('', 'pods') as unknown as PodObject[];
  }

  /** One Pod, or undefined. */
  pod(namespace: string, name: string): PodObject | undefined {
    return this.pods().find((p) => p.metadata.namespace === namespace && p.metadata.name === name);
  }

  /** Binds the Pod to the node: from now on a delete leaves it terminating until {@link settle}. */
  async schedule(namespace: string, name: string): Promise<void> {
    await adminOk(this.server, 'PATCH', podPath(namespace, name), {
      contentType: MERGE,
      body: { spec: { nodeName: NODE_NAME } },
    });
    await this.#status(namespace, name, {
      conditions: [{ type: 'PodScheduled', status: 'True' }],
    });
  }

  /**
   * Runs the Pod: phase Running, its container ready, with `ip` as its
   * address; without `ip`, running but with no address known yet (and not
   * ready). A second call with another IP changes it.
   */
  async run(namespace: string, name: string, ip: string | undefined): Promise<void> {
    await this.#status(namespace, name, {
      phase: 'Running',
      podIP: ip ?? null,
      podIPs: ip === undefined ? null : [{ ip }],
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: ip === undefined ? 'False' : 'True' },
      ],
      containerStatuses: [
        {
          name: 'squid',
          ready: ip !== undefined,
          restartCount: 0,
          image: 'squid',
          imageID: '',
          state: { running: { startedAt: new Date().toISOString() } },
        },
      ],
    });
  }

  /** Running again, with the address it has. */
  async resume(namespace: string, name: string): Promise<void> {
    const ip = this.pod(namespace, name)?.status?.podIP;
    await this.run(namespace, name, ip);
  }

  /** Sets the phase as the kubelet (or the node controller) reports it; not Ready. */
  async setPhase(namespace: string, name: string, phase: string): Promise<void> {
    await this.#status(namespace, name, {
      phase,
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'False' },
      ],
    });
  }

  /** Lets every terminating Pod go, as the kubelet does once its containers stopped. */
  async settle(): Promise<void> {
    for (const p of this.pods()) {
      const { namespace, name, deletionTimestamp } = p.metadata;
      if (deletionTimestamp === undefined) continue;
      await this.stopSquid(namespace, name);
      await this.#deleteNow(namespace, name);
    }
    await this.server.settled();
  }

  /** Deletes the Pod at once, whatever holds it, and waits until it is gone. */
  async remove(namespace: string, name: string): Promise<void> {
    const p = this.pod(namespace, name);
    if (p === undefined) return;
    if ((p.metadata.finalizers ?? []).length > 0) {
      await adminOk(this.server, 'PATCH', podPath(namespace, name), {
        contentType: MERGE,
        body: { metadata: { finalizers: null } },
      });
    }
    if (this.pod(namespace, name) !== undefined) await this.#deleteNow(namespace, name);
    await this.server.settled();
    if (this.pod(namespace, name) !== undefined) throw new Error(`Pod ${namespace}/${name} stayed`);
  }

  /** The kubelet's final delete: a grace period of 0. */
  async #deleteNow(namespace: string, name: string): Promise<void> {
    await adminOk(this.server, 'DELETE', `${podPath(namespace, name)}?gracePeriodSeconds=0`).catch(
      (err: unknown) => {
        if (!String(err).includes(': 404 ')) throw err;
      },
    );
  }

  async #status(namespace: string, name: string, status: Record<string, unknown>): Promise<void> {
    await adminOk(this.server, 'PATCH', `${podPath(namespace, name)}/status`, {
      contentType: MERGE,
      body: { status },
    });
  }
}
