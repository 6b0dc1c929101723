// Peer: the real OpenTelemetry SDK (sdk-trace-base with an in-memory exporter, sdk-metrics
// with a pull reader, AsyncLocalStorage context) and a recording logger.
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  type CreateRequest,
  type Instance,
  isTransient,
  observe,
  observeSeam,
  type Provider,
  permanent,
  withChildSpan,
} from '../src/index.js';
import { type LogLine, recordingLogger, telemetry } from './telemetry.js';

const tel = telemetry();

const req: CreateRequest = {
  name: 'proxy-a',
  namespace: 'ns',
  uid: 'u1',
  port: 3128,
  cloudInit: new TextEncoder().encode('#cloud-config\nsecret: CLOUD-INIT-SENTINEL\n'),
  placement: {},
};

function fakeProvider(behaviour: Partial<Provider> = {}): Provider {
  const seam = observeSeam(
    {
      async lookup(_name: string) {
        return 'found';
      },
    },
    { prefix: 'fake', provider: 'fake-a', tracer: tel.tracer },
  );
  return {
    name: 'fake-a',
    type: 'fake',
    async create() {
      await seam.lookup('proxy-a');
      return 'id-1';
    },
    async get(id: string): Promise<Instance> {
      return { id, uid: 'u1', createdAt: new Date(0) };
    },
    async delete() {},
    async listByTag() {
      return [];
    },
    ...behaviour,
  };
}

beforeEach(() => tel.reset());

describe('observe', () => {
  it('makes one span per operation with name, type and a child span per backend call', async () => {
    const lines: LogLine[] = [];
    const p = observe(fakeProvider(), {
      tracer: tel.tracer,
      meter: tel.meter,
      logger: recordingLogger(lines),
    });
    await expect(p.create(req)).resolves.toBe('id-1');
    const spans = tel.spans();
    const op = spans.find((s) => s.name === 'provider.create');
    const child = spans.find((s) => s.name === 'fake.lookup');
    expect(op).toBeDefined();
    expect(op?.attributes).toMatchObject({
      'proxy_op.provider.name': 'fake-a',
      'proxy_op.provider.type': 'fake',
      'proxy_op.operation': 'create',
      'proxy_op.instance.name': 'proxy-a',
    });
    expect(child?.parentSpanContext?.spanId).toBe(op?.spanContext().spanId);
    expect(child?.kind).toBe(SpanKind.CLIENT);
    const text = JSON.stringify(spans.map((s) => s.attributes)) + JSON.stringify(lines);
    expect(text).not.toContain('CLOUD-INIT-SENTINEL');
  });

  it('logs one debug outcome line with traceId and spanId', async () => {
    const lines: LogLine[] = [];
    const p = observe(fakeProvider(), { tracer: tel.tracer, logger: recordingLogger(lines) });
    await p.get('id-1');
    const outcome = lines.filter((l) => l.msg === 'provider get succeeded');
    expect(outcome).toHaveLength(1);
    expect(outcome[0]?.level).toBe('debug');
    const span = tel.spans().find((s) => s.name === 'provider.get');
    expect(outcome[0]?.fields).toMatchObject({
      provider: 'fake-a',
      type: 'fake',
      op: 'get',
      id: 'id-1',
      traceId: span?.spanContext().traceId,
      spanId: span?.spanContext().spanId,
    });
    expect(lines.every((l) => l.level === 'debug' || l.level === 'trace')).toBe(true);
  });

  it('records the error class on the span, the counter and the log line', async () => {
    const lines: LogLine[] = [];
    const p = observe(
      fakeProvider({
        async get() {
          throw permanent('fake-a', 'get', 'malformed provider ID');
        },
      }),
      { tracer: tel.tracer, meter: tel.meter, logger: recordingLogger(lines) },
    );
    await expect(p.get('bad')).rejects.toMatchObject({ code: 'PROVIDER_PERMANENT' });
    const span = tel.spans().find((s) => s.name === 'provider.get');
    expect(span?.attributes['proxy_op.error.class']).toBe('Permanent');
    expect(span?.status.code).toBe(SpanStatusCode.ERROR);
    expect(lines.find((l) => l.msg === 'provider get failed')?.fields).toMatchObject({
      errorClass: 'Permanent',
      code: 'PROVIDER_PERMANENT',
    });
    const all = await tel.metrics();
    const counter = all.find((m) => m.descriptor.name === 'proxy_op.provider.operations');
    const points = counter?.dataPoints ?? [];
    expect(
      points.some(
        (d) =>
          d.attributes['proxy_op.outcome'] === 'Permanent' &&
          d.attributes['proxy_op.operation'] === 'get' &&
          d.value === 1,
      ),
    ).toBe(true);
    const hist = all.find((m) => m.descriptor.name === 'proxy_op.provider.operation.duration');
    expect(hist?.descriptor.unit).toBe('s');
    expect(hist?.dataPoints.length).toBeGreaterThan(0);
  });

  it('turns a stray error into a Transient ProviderError with the configured name', async () => {
    const p = observe(
      fakeProvider({
        async delete() {
          throw new Error('socket hang up');
        },
      }),
      { tracer: tel.tracer },
    );
    const err = await p.delete('x').catch((e: unknown) => e);
    expect(isTransient(err)).toBe(true);
    expect((err as { provider: string }).provider).toBe('fake-a');
    expect((err as { op: string }).op).toBe('delete');
  });

  it('a stray error after the signal fired is the cancellation error', async () => {
    const ac = new AbortController();
    ac.abort(new Error('caller gave up'));
    const p = observe(
      fakeProvider({
        async listByTag() {
          throw new Error('aborted');
        },
      }),
      { tracer: tel.tracer },
    );
    const err = await p.listByTag({ signal: ac.signal }).catch((e: unknown) => e);
    expect(isTransient(err)).toBe(true);
    expect((err as Error).message).toBe('list was cancelled');
  });

  it('passes TypeError (misuse) through unchanged', async () => {
    const misuse = new TypeError('request must be an object');
    const p = observe(
      fakeProvider({
        async create() {
          throw misuse;
        },
      }),
      { tracer: tel.tracer },
    );
    await expect(p.create(req)).rejects.toBe(misuse);
  });

  it('wraps check as providerhealth.check only when the provider has one', async () => {
    const without = observe(fakeProvider(), { tracer: tel.tracer });
    expect(without.check).toBeUndefined();
    const withCheck = observe(
      fakeProvider({
        async check() {
          return [
            {
              target: 't',
              address: 'a',
              ready: true,
              reason: 'Reachable',
              message: '',
              details: {},
            },
          ];
        },
      }),
      { tracer: tel.tracer },
    );
    await expect(withCheck.check?.()).resolves.toHaveLength(1);
    expect(tel.spans().map((s) => s.name)).toContain('providerhealth.check');
  });
});

describe('withChildSpan', () => {
  it('makes no root span when nothing is active (parent-gated)', async () => {
    await withChildSpan(tel.tracer, 'HTTP GET', {}, async () => 1);
    expect(tel.spans()).toHaveLength(0);
  });

  it('nests under the active span and marks failures', async () => {
    await tel.tracer.startActiveSpan('parent', async (parent) => {
      await withChildSpan(tel.tracer, 'HTTP GET', { 'http.request.method': 'GET' }, async () => 1);
      await withChildSpan(tel.tracer, 'HTTP PUT', {}, async () => {
        throw new Error('x');
      }).catch(() => {});
      parent.end();
    });
    const spans = tel.spans();
    const parent = spans.find((s) => s.name === 'parent');
    for (const name of ['HTTP GET', 'HTTP PUT']) {
      expect(spans.find((s) => s.name === name)?.parentSpanContext?.spanId).toBe(
        parent?.spanContext().spanId,
      );
    }
    expect(spans.find((s) => s.name === 'HTTP PUT')?.status.code).toBe(SpanStatusCode.ERROR);
  });
});

describe('observeSeam', () => {
  it('logs exactly one line per call with the safe fields only', async () => {
    const lines: LogLine[] = [];
    const seam = observeSeam(
      {
        async upload(_name: string, _body: Uint8Array) {
          return 'ok';
        },
        async fail(_name: string) {
          throw new Error('nope');
        },
      },
      {
        prefix: 'pve',
        provider: 'pve-a',
        logger: recordingLogger(lines),
        tracer: tel.tracer,
        fields: (_m, args) => ({ name: String(args[0]) }),
      },
    );
    await seam.upload('seed.iso', new TextEncoder().encode('BODY-SENTINEL'));
    await expect(seam.fail('x')).rejects.toThrow('nope');
    expect(lines).toHaveLength(2);
    expect(lines[0]?.fields).toMatchObject({ call: 'upload', name: 'seed.iso', provider: 'pve-a' });
    expect(lines[1]?.fields).toMatchObject({ call: 'fail', error: 'Error' });
    expect(JSON.stringify(lines)).not.toContain('BODY-SENTINEL');
    expect(JSON.stringify(lines), 'error messages are not logged by default').not.toContain('nope');
  });

  it('logs the safe error facts a provider chooses', async () => {
    const lines: LogLine[] = [];
    const seam = observeSeam(
      {
        async call() {
          throw Object.assign(new Error("401: invalid token 'TOKEN-SENTINEL'"), { status: 401 });
        },
      },
      {
        prefix: 'pve',
        provider: 'pve-a',
        logger: recordingLogger(lines),
        errorFields: (err) => ({ httpStatus: (err as { status: number }).status }),
      },
    );
    await expect(seam.call()).rejects.toThrow();
    expect(lines[0]?.fields).toMatchObject({ call: 'call', httpStatus: 401 });
    expect(JSON.stringify(lines)).not.toContain('TOKEN-SENTINEL');
  });
});
