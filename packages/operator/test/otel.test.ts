// Peers: the OpenTelemetry Node SDK and its OTLP/HTTP exporter inside a `proxy-op run`
// process, configured only by the standard OTEL_* variables; the OTLP/HTTP receiver of
// @proxy-op/testkit on loopback in this test decodes what arrives (the JSON encoding,
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL). The providers: the file-backed reference provider, and
// the built-in local provider with its real proxy processes on loopback addresses, which the
// operator probes.
import { leakedIn } from '@proxy-op/providertest';
import {
  CLOUD_INIT_SENTINEL,
  freePort,
  lifecycleTrace,
  type OtlpReceiver,
  runStandaloneLifecycle,
  SENTINEL_CLOUD_INIT,
  SpanTree,
  startOtlpReceiver,
} from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracingRequested } from '../src/process/otel.js';
import { CLI, type CliWorkspace, cliWorkspace, runCli } from './cli-support.js';

describe('tracingRequested', () => {
  it('reads the standard variables', () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(
      tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://x:4318/v1/traces' }),
    ).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
    expect(
      tracingRequested({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x' }),
    ).toBe(false);
    expect(
      tracingRequested({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x' }),
    ).toBe(false);
  });
});

describe('traces out over OTLP/HTTP', () => {
  let receiver: OtlpReceiver;
  let ws: CliWorkspace;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    ws = await cliWorkspace();
  });

  afterAll(async () => {
    await receiver.close();
    await ws.dispose();
  });

  it('exports one trace per reconcile, with provider.<op> spans and the backend calls beneath, and logs carry their IDs', async () => {
    await ws.writeProxy('web', 3128);
    const r = await runCli(ws.runArgs(['--once', '--output', 'json', '--log-level', 'debug']), {
      ...receiver.env,
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    });
    expect(r.code).toBe(0);
    expect(receiver.problems).toEqual([]);
    expect(receiver.requests.length).toBeGreaterThan(0);
    expect(receiver.requests[0]).toBe('POST /v1/traces application/json');
    const spans = receiver.spans();
    expect(spans[0]?.resource['service.name']).toBe('proxy-op');
    expect(spans[0]?.resource['deployment.environment.name']).toBe('test');
    const tree = new SpanTree(spans);
    const reconciles = tree.named('proxy.reconcile');
    expect(reconciles.length).toBeGreaterThanOrEqual(1);
    // Each reconcile is the root of its own trace.
    for (const rec of reconciles) {
      expect(rec.parentSpanId).toBe('');
      expect(rec.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(rec.traceId).not.toMatch(/^0+$/);
      expect(reconciles.filter((o) => o.traceId === rec.traceId)).toHaveLength(1);
    }
    const create = tree.named('provider.create')[0];
    if (create === undefined) throw new Error(`no provider.create in ${spans.map((s) => s.name)}`);
    const root = tree.parentOf(create);
    expect(root?.name).toBe('proxy.reconcile');
    expect(create.traceId).toBe(root?.traceId);
    const get = spans.find((s) => s.name === 'provider.get' && s.traceId === create.traceId);
    expect(get && tree.parentOf(get)?.spanId).toBe(root?.spanId);
    // The provider's own calls (the reference backend's seam) are children of provider.create.
    const calls = tree.childrenOf(create);
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every((c) => c.name.startsWith('memory.'))).toBe(true);
    // Log lines carry the real IDs of the span they were written in.
    const logs = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const created = logs.find((l) => l.msg === 'instance created');
    expect(created?.traceId).toBe(root?.traceId);
    expect(created?.spanId).toBe(root?.spanId);
    const providerLine = logs.find((l) => l.msg === 'provider create succeeded');
    expect(providerLine?.traceId).toBe(create.traceId);
    expect(providerLine?.spanId).toBe(create.spanId);
  }, 60_000);
});

describe('the local provider traced over OTLP/HTTP', () => {
  let receiver: OtlpReceiver;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });

  afterAll(async () => {
    await receiver.close();
  });

  it('puts the local.* calls of a Create and a Delete beneath provider.create and provider.delete, with no cloud-init in any span', async () => {
    const life = await runStandaloneLifecycle({
      cli: CLI,
      providers: {
        installation: 'trace-test',
        providers: [{ name: 'lab-local', type: 'local', local: {} }],
      },
      spec: {
        provider: 'lab-local',
        port: await freePort('127.0.0.1'),
        allowedSources: ['127.0.0.1/32'],
        cloudInit: SENTINEL_CLOUD_INIT,
      },
      env: receiver.env,
    });
    expect(life.exit).toEqual({ code: 0, signal: null });
    expect(life.created.providerID).toMatch(/^processes\//);
    console.info(`local: created in ${life.createMs} ms, deleted in ${life.deleteMs} ms`);
    const trace = lifecycleTrace(receiver, life, {
      provider: 'lab-local',
      type: 'local',
      callPrefix: 'local.',
    });
    expect(trace.problems).toEqual([]);
    expect(trace.names.create).toEqual(
      expect.arrayContaining(['local.spawn', 'local.awaitAnswering']),
    );
    expect(trace.names.delete).toEqual(expect.arrayContaining(['local.kill', 'local.removeState']));
    expect(leakedIn(receiver.text(), CLOUD_INIT_SENTINEL)).toBeUndefined();
  }, 60_000);
});

describe('probes traced over OTLP/HTTP', () => {
  let receiver: OtlpReceiver;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });

  afterAll(async () => {
    await receiver.close();
  });

  it('a probe is a span under the reconcile trace that saw its instance Running, with a step event each', async () => {
    const life = await runStandaloneLifecycle({
      cli: CLI,
      providers: {
        installation: 'probe-trace',
        providers: [{ name: 'here', type: 'local', local: { addressRange: '127.0.76.0/24' } }],
      },
      spec: {
        provider: 'here',
        port: await freePort('127.0.0.1'),
        allowedSources: ['127.0.0.0/8'],
      },
      env: receiver.env,
      probe: true,
    });
    expect(life.exit).toEqual({ code: 0, signal: null });
    const tree = new SpanTree(receiver.spans());
    const probes = tree.named('proxy.probe');
    expect(probes.length).toBeGreaterThanOrEqual(1);
    for (const p of probes) {
      const parent = tree.parentOf(p);
      expect(parent?.name).toBe('proxy.reconcile');
      expect(p.traceId).toBe(parent?.traceId);
      expect(p.attributes['proxy_op.provider']).toBe('here');
      expect(String(p.attributes['proxy_op.probe.egress_ip'])).toMatch(/^127\.0\.76\.\d+$/);
      expect(p.events.map((e) => e.name)).toEqual([
        'get.connect',
        'get.status',
        'get.nonce',
        'connect.connect',
        'connect.tunnel',
        'connect.status',
        'connect.nonce',
        // The proxy has a credential (the default): the probe checks that none is refused.
        'auth.connect',
        'auth.auth',
      ]);
    }
  }, 60_000);
});
