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
 * Peer: the Kubernetes API test server.
 *
 * @module
 */
import type { KubeTestServer } from '@proxy-op/kube-testserver';
import { adminOk, podPath } from './admin.js';

/** The node every Pod is scheduled to. */
export const NODE_NAME = 'node-a';

const MERGE = 'application/merge-patch+json';

interface PodObject {
  metadata: {
    name: string;
    namespace: string;
    deletionTimestamp?: string;
    finalizers?: string[];
  };
  status?: { phase?: string; podIP?: string };
}

/** The kubelet of one test server. */
export class Kubelet {
  constructor(readonly server: KubeTestServer) {}

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
