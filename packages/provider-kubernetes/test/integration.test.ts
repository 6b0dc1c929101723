// Peer: a real cluster, when PROXY_OP_KUBE_TEST_KUBECONFIG names a kubeconfig for it (the test makes
// one Squid Pod and deletes it). Without it, this file prints why it skips; the same lifecycle runs
// against the Kubernetes API test server in test/provider.test.ts.
import { readFileSync } from 'node:fs';
import { createProvider, isNotFound } from '@proxy-op/contract';
import { createLogSink, createSpanRecorder } from '@proxy-op/providertest';
import { describe, it } from 'vitest';
import { providerModule } from '../src/module.js';
import { lifecycle, poll } from './support/lifecycle.js';

const env = process.env;
const kubeconfig = env.PROXY_OP_KUBE_TEST_KUBECONFIG ?? '';
const seconds = (v: string | undefined, d: number) => (v === undefined ? d : Number(v));

if (kubeconfig === '') {
  console.warn(
    'skipping the real-cluster lifecycle: set PROXY_OP_KUBE_TEST_KUBECONFIG (and optionally PROXY_OP_KUBE_TEST_NAMESPACE, _IMAGE, _SOURCES, _TIMEOUT)',
  );
}

describe.skipIf(kubeconfig === '')('a real cluster', () => {
  it('Create, Get to Running, ListByTag, Delete, NotFound, nothing left', async () => {
    const namespace = env.PROXY_OP_KUBE_TEST_NAMESPACE ?? 'default';
    const timeoutMs = seconds(env.PROXY_OP_KUBE_TEST_TIMEOUT, 300) * 1000;
    const logs = createLogSink();
    const spans = createSpanRecorder();
    const provider = await createProvider(
      providerModule,
      'kube-it',
      {
        kubeconfig,
        namespace,
        allowedSources: (env.PROXY_OP_KUBE_TEST_SOURCES ?? '10.0.0.0/8').split(','),
        images: {
          squid: { image: env.PROXY_OP_KUBE_TEST_IMAGE ?? 'docker.io/ubuntu/squid:latest' },
        },
        machineTypes: { small: { cpu: '50m', memory: '128Mi' } },
      },
      { logger: logs.logger, tracer: spans.tracer },
    );
    const uid = `it-${Date.now().toString(36)}`;
    await lifecycle(provider, {
      request: {
        name: `proxy-it-${uid}`,
        namespace,
        uid,
        port: 3128,
        cloudInit: new TextEncoder().encode('#cloud-config\n'),
        placement: { machineType: 'small', image: 'squid' },
      },
      untilRunning: (id) =>
        poll('Running', timeoutMs, async () => (await provider.get(id)).state === 'Running'),
      untilGone: (id) =>
        poll('gone', timeoutMs, async () => provider.get(id).then(() => false, isNotFound)),
      podsNamed: async (name) =>
        (await provider.listByTag()).filter((i) => i.id === `${namespace}/${name}`).length,
      logs,
      spans,
      secret: readFileSync(kubeconfig, 'utf8').match(/token:\s*(\S+)/)?.[1],
    });
  }, 900_000);
});
