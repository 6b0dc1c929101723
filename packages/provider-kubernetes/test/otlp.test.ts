// Peers: the proxy-op command (the operator package's bin, running its built CLI) with this
// provider by its type `kubernetes` (the package's built module, as the operator loads it),
// against the Kubernetes API test server in this process behind the HTTPS front, with the
// harness's kubelet running the Pod (test/support/fixture.ts), reached through the real
// @kubernetes/client-node; it exports its spans by the standard OTEL_* variables over OTLP/HTTP
// (JSON) to the receiver of @proxy-op/testkit in this test.
import { readFile } from 'node:fs/promises';
import { leakedIn } from '@proxy-op/providertest';
import {
  CLOUD_INIT_SENTINEL,
  lifecycleTrace,
  proxyOpCommand,
  runStandaloneLifecycle,
  SENTINEL_CLOUD_INIT,
  startOtlpReceiver,
} from '@proxy-op/testkit';
import { describe, expect, it } from 'vitest';
import { createKubeFixture } from './support/fixture.js';

describe('kubernetes traced over OTLP/HTTP by a proxy-op run', () => {
  it('puts the API calls of a Create and a Delete beneath provider.create and provider.delete, with no token or cloud-init in any span', async ({
    onTestFinished,
  }) => {
    const receiver = await startOtlpReceiver();
    const f = await createKubeFixture({});
    onTestFinished(async () => {
      await f.cleanup?.();
      await receiver.close();
    });
    // The scheduler and the kubelet: a created Pod is bound and runs at once.
    f.front.onPodCreated = async (namespace, name) => {
      await f.kubelet.schedule(namespace, name);
      await f.kubelet.run(namespace, name, '10.42.0.7');
    };

    const life = await runStandaloneLifecycle({
      cli: proxyOpCommand(import.meta.url),
      providers: {
        installation: 'trace-test',
        // The default request budget: the fixture's 3 s one is for the budget tests, and a trace
        // of a Create retried after one ran out on a loaded machine is not what this test reads.
        providers: [
          {
            name: 'kube',
            type: 'kubernetes',
            kubernetes: { ...f.config, requestTimeoutSeconds: 30 },
          },
        ],
      },
      spec: {
        provider: 'kube',
        port: 3128,
        placement: { zone: 'zone-a', machineType: 'small', image: 'squid' },
        allowedSources: ['10.0.0.0/8'],
        cloudInit: SENTINEL_CLOUD_INIT,
      },
      env: receiver.env,
      // The kubelet lets a deleted Pod go once its containers have stopped.
      whileDeleting: () => f.kubelet.settle(),
    });
    console.info(`kubernetes: created in ${life.createMs} ms, deleted in ${life.deleteMs} ms`);
    expect(life.exit).toEqual({ code: 0, signal: null });
    const id = String(life.created.providerID);
    expect(id).toMatch(/^default\/proxy-/);
    expect(f.kubelet.pods()).toEqual([]);

    const trace = lifecycleTrace(receiver, life, {
      provider: 'kube',
      type: 'kubernetes',
      callPrefix: 'kubernetes.',
    });
    expect(trace.problems).toEqual([]);
    expect(trace.names.create).toEqual(expect.arrayContaining(['kubernetes.createPod']));
    expect(trace.names.delete).toEqual(
      expect.arrayContaining(['kubernetes.readPod', 'kubernetes.deletePod']),
    );
    // The service account token the provider presented, as its file holds it.
    const token = (await readFile(f.tokenFile, 'utf8')).trim();
    expect(leakedIn(receiver.text(), token)).toBeUndefined();
    expect(leakedIn(receiver.text(), CLOUD_INIT_SENTINEL)).toBeUndefined();
  }, 60_000);
});
