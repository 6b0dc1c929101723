// The real-stack trace test every libvirt provider on the engine runs (kvm2's, then kvm's), on
// the stack its stack.test.ts started: a `proxy-op run --standalone` process (the command the
// provider package's test resolves) with the provider by its type, exporting its spans by the
// standard OTEL_* variables over OTLP/HTTP (JSON) to the receiver of @proxy-op/testkit, one
// Proxy created then deleted. The guest is not waited for: the Create's and the Delete's calls
// are the trace, and a domain that has not booted yet is destroyed as well as one that has.
import { leakedIn } from '@proxy-op/providertest';
import {
  CLOUD_INIT_SENTINEL,
  lifecycleTrace,
  runStandaloneLifecycle,
  SENTINEL_CLOUD_INIT,
  startOtlpReceiver,
} from '@proxy-op/testkit';
import type * as Vitest from 'vitest';
import { IMAGE_PREFIX, type StackSuiteContext } from './stack-suite.js';

/** What the trace test needs: the running stack, and the `proxy-op` command to run. */
export interface StackTraceContext {
  readonly stack: StackSuiteContext['stack'];
  /** The operator package's `bin/proxy-op.js`, as the provider package resolves it. */
  readonly cli: string;
}

/** Registers the trace test for the provider of `type`, whose backend call spans are `<prefix>.<call>`. */
export function describeStackTrace(
  vitest: typeof Vitest,
  ctx: StackTraceContext,
  o: { readonly type: string; readonly prefix: string },
): void {
  const { expect, it } = vitest;
  it(`traces a proxy-op run over OTLP/HTTP: the ${o.prefix}.* calls of a Create and a Delete beneath provider.create and provider.delete, no key or cloud-init in any span`, {
    timeout: 120_000,
  }, async ({ onTestFinished }) => {
    const stack = ctx.stack();
    const receiver = await startOtlpReceiver();
    onTestFinished(() => receiver.close());
    const life = await runStandaloneLifecycle({
      cli: ctx.cli,
      providers: {
        installation: 'trace-test',
        providers: [{ name: `${o.type}-otlp`, type: o.type, [o.type]: stack.config() }],
      },
      spec: {
        provider: `${o.type}-otlp`,
        port: 3128,
        placement: { zone: 'kvm1', machineType: 'small', image: 'guest' },
        allowedSources: ['10.0.0.0/8'],
        cloudInit: SENTINEL_CLOUD_INIT,
      },
      until: 'created',
      env: receiver.env,
    });
    console.info(`${o.type} stack: created in ${life.createMs} ms, deleted in ${life.deleteMs} ms`);
    expect(life.exit).toEqual({ code: 0, signal: null });
    const id = String(life.created.providerID);
    expect(id).toMatch(/^hosts\/kvm1\/domains\/proxy-/);
    expect(await stack.domains()).toEqual([]);
    expect((await stack.volumes()).filter((v) => !v.startsWith(IMAGE_PREFIX))).toEqual([]);

    const trace = lifecycleTrace(receiver, life, {
      provider: `${o.type}-otlp`,
      type: o.type,
      callPrefix: `${o.prefix}.`,
    });
    expect(trace.problems).toEqual([]);
    expect(trace.names.create).toEqual(
      expect.arrayContaining([
        `${o.prefix}.dial`,
        `${o.prefix}.storageVolUpload`,
        `${o.prefix}.domainDefineXml`,
        `${o.prefix}.domainCreate`,
      ]),
    );
    expect(trace.names.delete).toEqual(
      expect.arrayContaining([
        `${o.prefix}.domainDestroy`,
        `${o.prefix}.domainUndefineFlags`,
        `${o.prefix}.storageVolDelete`,
      ]),
    );
    expect(leakedIn(receiver.text(), stack.sshd.clientKey.trim())).toBeUndefined();
    expect(leakedIn(receiver.text(), CLOUD_INIT_SENTINEL)).toBeUndefined();
  });
}
