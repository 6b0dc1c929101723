// Peer: the real stack: libvirtd (Debian libvirt-daemon, QEMU under TCG) reached through a real sshd (openssh-server) over the production SSH transport, the test guest image (linux-image-amd64, busybox, qemu-guest-agent) served over HTTP, a real Linux guest reading the seed and reporting its address through qemu-guest-agent; virsh on the same daemon as the oracle. Last, on the same stack: the proxy-op command (the operator package's bin) with this provider by its type, exporting its spans over OTLP/HTTP (JSON) to the receiver of @proxy-op/testkit in this test.
import { createProvider, type Provider } from '@proxy-op/contract';
import {
  type LibvirtStack,
  STACK_PEERS,
  startLibvirtStack,
  TEST_GUEST_PEERS,
} from '@proxy-op/libvirt-harness';
import { createLogSink, createSpanRecorder } from '@proxy-op/providertest';
import { describeWithPeers, proxyOpCommand } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { describeStackLifecycle } from '../../libvirt-provider/test/support/stack-suite.js';
import { describeStackTrace } from '../../libvirt-provider/test/support/stack-trace.js';
import { providerModule } from '../src/module.js';

const { afterAll, beforeAll } = vitest;

describeWithPeers(
  vitest,
  'kvm2 on a real libvirtd, through a real sshd, with a real guest',
  [...STACK_PEERS, ...TEST_GUEST_PEERS],
  () => {
    let stack: LibvirtStack;
    const logs = createLogSink();
    const spans = createSpanRecorder();
    const built: Provider[] = [];
    const build = async (config: Record<string, unknown>, deps: Record<string, unknown> = {}) => {
      const p = await createProvider(providerModule, 'kvm2-ci', config, {
        logger: logs.logger,
        tracer: spans.tracer,
        ...deps,
      });
      built.push(p);
      return p;
    };

    beforeAll(async () => {
      stack = await startLibvirtStack();
    }, 300_000);

    afterAll(async () => {
      for (const p of built) await p.close?.();
      await stack?.stop();
    });

    describeStackLifecycle(
      vitest,
      { stack: () => stack, build, logs, spans },
      { type: 'kvm2', prefix: 'kvm2' },
    );

    describeStackTrace(
      vitest,
      { stack: () => stack, cli: proxyOpCommand(import.meta.url) },
      { type: 'kvm2', prefix: 'kvm2' },
    );
  },
);
