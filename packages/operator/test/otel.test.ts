// Peers: the OpenTelemetry Node SDK and its OTLP/HTTP exporter inside a `proxy-op run`
// process, configured only by the standard OTEL_* variables; an OTLP/HTTP receiver on loopback
// in this test decodes what arrives (the JSON encoding, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracingRequested } from '../src/index.js';
import { type CliWorkspace, cliWorkspace, runCli } from './cli-support.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Array<{ key: string; value: { stringValue?: string } }>;
}

interface Received {
  resource: Record<string, string>;
  spans: OtlpSpan[];
}

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
  let receiver: Server;
  let port = 0;
  const received: Received[] = [];
  const paths: string[] = [];
  let ws: CliWorkspace;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => {
        body += d;
      });
      req.on('end', () => {
        paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
        const msg = JSON.parse(body) as {
          resourceSpans: Array<{
            resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
            scopeSpans: Array<{ spans: OtlpSpan[] }>;
          }>;
        };
        for (const rs of msg.resourceSpans) {
          const resource: Record<string, string> = {};
          for (const a of rs.resource.attributes) resource[a.key] = a.value.stringValue ?? '';
          received.push({ resource, spans: rs.scopeSpans.flatMap((s) => s.spans) });
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    port = (receiver.address() as AddressInfo).port;
    ws = await cliWorkspace();
  });

  afterAll(async () => {
    await new Promise((r) => receiver.close(r));
    await ws.dispose();
  });

  it('exports one trace per reconcile, with provider.<op> spans and the backend calls beneath, and logs carry their IDs', async () => {
    await ws.writeProxy('web', 3128);
    const r = await runCli(ws.runArgs(['--once', '--output', 'json', '--log-level', 'debug']), {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    });
    expect(r.code).toBe(0);
    expect(paths.length).toBeGreaterThan(0);
    expect(paths[0]).toBe('POST /v1/traces application/json');
    expect(received[0]?.resource['service.name']).toBe('proxy-op');
    expect(received[0]?.resource['deployment.environment.name']).toBe('test');
    const spans = received.flatMap((x) => x.spans);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentOf = (s: OtlpSpan) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);
    const reconciles = spans.filter((s) => s.name === 'proxy.reconcile');
    expect(reconciles.length).toBeGreaterThanOrEqual(1);
    // Each reconcile is the root of its own trace.
    for (const rec of reconciles) {
      expect(rec.parentSpanId ?? '').toBe('');
      expect(rec.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(rec.traceId).not.toMatch(/^0+$/);
      expect(reconciles.filter((o) => o.traceId === rec.traceId)).toHaveLength(1);
    }
    const create = spans.find((s) => s.name === 'provider.create');
    if (create === undefined) throw new Error(`no provider.create in ${spans.map((s) => s.name)}`);
    const root = parentOf(create);
    expect(root?.name).toBe('proxy.reconcile');
    expect(create.traceId).toBe(root?.traceId);
    const get = spans.find((s) => s.name === 'provider.get' && s.traceId === create.traceId);
    expect(parentOf(get as OtlpSpan)?.spanId).toBe(root?.spanId);
    // The provider's own calls (the reference backend's seam) are children of provider.create.
    const calls = spans.filter((s) => s.parentSpanId === create.spanId);
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
