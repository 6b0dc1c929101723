// Peer: a real AWS account, only when the AWS_TEST_* variables are set (README, Testing). It
// launches one small instance (Spot with AWS_TEST_MARKET=spot) with its security group, and
// terminates them again. Credentials: AWS_TEST_CREDENTIALS_FILE, else the SDK's default chain.
import { createProvider, errorClassOf, isNotFound, type Provider } from '@proxy-op/contract';
import { createLogSink, createSpanRecorder, leakedIn } from '@proxy-op/providertest';
import { consoleLogger, durationFromEnv, teeLogger } from '@proxy-op/testkit';
import { describe, expect, it } from 'vitest';
import { providerModule } from '../src/index.js';

const env = process.env;
const REQUIRED = [
  'AWS_TEST_REGION',
  'AWS_TEST_VPC_ID',
  'AWS_TEST_ZONE',
  'AWS_TEST_SUBNET_ID',
  'AWS_TEST_AMI',
] as const;
const missing = REQUIRED.filter((k) => (env[k] ?? '') === '');
if (missing.length > 0) {
  console.warn(
    `skipping the real-account EC2 tests: set ${missing.join(', ')} (see README, Testing)`,
  );
}

/** AWS_TEST_TIMEOUT: `15m`, `90s` or plain seconds. */
const timeoutMs = durationFromEnv(env.AWS_TEST_TIMEOUT, 15 * 60_000);
const instanceType = env.AWS_TEST_INSTANCE_TYPE ?? 't3.micro';

function config(): Record<string, unknown> {
  return {
    region: env.AWS_TEST_REGION,
    vpcId: env.AWS_TEST_VPC_ID,
    subnets: { [String(env.AWS_TEST_ZONE)]: env.AWS_TEST_SUBNET_ID },
    images: { test: env.AWS_TEST_AMI },
    instanceTypes: [instanceType],
    ...(env.AWS_TEST_MARKET ? { market: env.AWS_TEST_MARKET } : {}),
    ...(env.AWS_TEST_ADDRESS_MODE ? { addressMode: env.AWS_TEST_ADDRESS_MODE } : {}),
    ...(env.AWS_TEST_CREDENTIALS_FILE ? { credentialsFile: env.AWS_TEST_CREDENTIALS_FILE } : {}),
    ...(env.AWS_TEST_PROFILE ? { credentialsProfile: env.AWS_TEST_PROFILE } : {}),
  };
}

const CLOUD_INIT_SECRET = 'CLOUDINIT-SENTINEL-real-account-8e1c';

async function poll<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5_000));
  }
}

describe.skipIf(missing.length > 0)('a real AWS account', () => {
  it('AWS: Check reports the region ready (subnet, AMI, instance type, permissions by dry run)', async () => {
    const p = await createProvider(providerModule, 'aws-test', config(), {});
    try {
      const [r] = await p.check!();
      expect(r?.reason, r?.message).toBe('Reachable');
    } finally {
      await p.close?.();
    }
  });

  it(
    'AWS: lifecycle: create, repeat, Running, listed, delete, gone, nothing left',
    async () => {
      const logs = createLogSink();
      const spans = createSpanRecorder();
      // AWS_TEST_LOG_LEVEL (`debug`, `trace`) prints the provider's lines at that level and above.
      const logger = teeLogger(logs.logger, consoleLogger(env.AWS_TEST_LOG_LEVEL));
      const provider: Provider = await createProvider(providerModule, 'aws-test', config(), {
        logger,
        tracer: spans.tracer,
      });
      const name = `proxy-op-it-${Date.now().toString(36)}`;
      const uid = `00000000-0000-4000-8000-${Date.now().toString().padStart(12, '0').slice(-12)}`;
      const req = {
        name,
        namespace: 'default',
        uid,
        port: 3128,
        cloudInit: new TextEncoder().encode(`#cloud-config\n# ${CLOUD_INIT_SECRET}\n`),
        allowedSources: [env.AWS_TEST_SOURCE ?? '192.0.2.0/24'],
        placement: { zone: env.AWS_TEST_ZONE, machineType: instanceType, image: 'test' },
      };
      let id: string | undefined;
      try {
        id = await provider.create(req);
        expect(id).toBe(`regions/${env.AWS_TEST_REGION}/instances/${name}`);
        expect(await provider.create(req)).toBe(id);
        const running = await poll('Running', async () => {
          const inst = await provider.get(id as string);
          return inst.state === 'Running' ? inst : undefined;
        });
        expect(running.uid).toBe(uid);
        expect(running.ip).toEqual(expect.any(String));
        expect(running.location?.region).toBe(env.AWS_TEST_REGION);
        expect((await provider.listByTag()).map((i) => i.id)).toContain(id);
        if (env.AWS_TEST_KEEP === '1') return;
        await provider.delete(id, { uid });
        await poll('NotFound', async () => {
          const err = await provider.get(id as string).then(
            () => undefined,
            (e: unknown) => e,
          );
          if (err === undefined) return undefined;
          if (!isNotFound(err)) throw new Error(`Get after Delete: ${errorClassOf(err)}`);
          return true;
        });
        await provider.delete(id);
        expect((await provider.listByTag()).map((i) => i.id)).not.toContain(id);
        const create = spans.spans().find((s) => s.name === 'provider.create');
        const children = spans
          .spans()
          .filter((s) => s.parentSpanContext?.spanId === create?.spanContext().spanId);
        expect(children.map((s) => s.name)).toContain('aws.runInstance');
        expect(leakedIn(logs.text(), CLOUD_INIT_SECRET)).toBeUndefined();
        expect(leakedIn(spans.text(), CLOUD_INIT_SECRET)).toBeUndefined();
      } finally {
        if (id !== undefined && env.AWS_TEST_KEEP !== '1') {
          await provider.delete(id).catch(() => {});
        }
        await provider.close?.();
      }
    },
    timeoutMs * 2 + 60_000,
  );
});
