// Peer: none but node:http: export requests written by hand (the OTLP/HTTP JSON encoding, as the
// OpenTelemetry JS exporter sends it) to the receiver on loopback; span trees built in memory.
import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  type OtlpReceiver,
  providerTraceReport,
  type ReceivedSpan,
  SpanTree,
  startOtlpReceiver,
} from '../src/index.js';

function post(
  r: OtlpReceiver,
  path: string,
  body: Buffer | string,
  headers: Record<string, string> = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${r.url}${path}`,
      { method: 'POST', headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const TRACE = '5b8efff798038103d269b633813fc60c';

/** One export: a resource and two spans, a root and its child, with every kind of value. */
const EXPORT = {
  resourceSpans: [
    {
      resource: {
        attributes: [{ key: 'service.name', value: { stringValue: 'proxy-op' } }],
      },
      scopeSpans: [
        {
          scope: { name: '@proxy-op/contract' },
          spans: [
            { traceId: TRACE, spanId: 'eee19b7ec3c1b174', name: 'proxy.reconcile', kind: 1 },
            {
              traceId: TRACE,
              spanId: 'eee19b7ec3c1b175',
              parentSpanId: 'eee19b7ec3c1b174',
              name: 'provider.create',
              kind: 1,
              status: { code: 2, message: 'PROVIDER_TRANSIENT' },
              events: [
                { name: 'get.connect', attributes: [{ key: 'ok', value: { boolValue: true } }] },
              ],
              attributes: [
                { key: 's', value: { stringValue: 'x' } },
                { key: 'i', value: { intValue: '42' } },
                { key: 'd', value: { doubleValue: 1.5 } },
                { key: 'b', value: { boolValue: true } },
                { key: 'a', value: { arrayValue: { values: [{ stringValue: 'y' }] } } },
                {
                  key: 'k',
                  value: { kvlistValue: { values: [{ key: 'z', value: { intValue: 1 } }] } },
                },
              ],
            },
          ],
        },
      ],
    },
  ],
};

describe('startOtlpReceiver', () => {
  it('decodes JSON exports, plain and gzipped, and keeps the bodies as received', async () => {
    const r = await startOtlpReceiver();
    try {
      expect(r.env).toEqual({
        OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      });
      expect(await post(r, '/v1/traces', JSON.stringify(EXPORT))).toBe(200);
      expect(
        await post(r, '/v1/traces', gzipSync(JSON.stringify(EXPORT)), {
          'content-encoding': 'gzip',
        }),
      ).toBe(200);
      expect(r.requests).toEqual([
        'POST /v1/traces application/json',
        'POST /v1/traces application/json',
      ]);
      expect(r.problems).toEqual([]);
      const spans = r.spans();
      expect(spans).toHaveLength(4);
      expect(spans[0]).toMatchObject({
        name: 'proxy.reconcile',
        parentSpanId: '',
        kind: 1,
        events: [],
      });
      expect(spans[1]).toEqual({
        traceId: TRACE,
        spanId: 'eee19b7ec3c1b175',
        parentSpanId: 'eee19b7ec3c1b174',
        name: 'provider.create',
        kind: 1,
        attributes: { s: 'x', i: 42, d: 1.5, b: true, a: ['y'], k: { z: 1 } },
        events: [{ name: 'get.connect', attributes: { ok: true } }],
        status: { code: 2, message: 'PROVIDER_TRANSIENT' },
        scope: '@proxy-op/contract',
        resource: { 'service.name': 'proxy-op' },
      });
      expect(r.text()).toBe(`${JSON.stringify(EXPORT)}\n${JSON.stringify(EXPORT)}`);
    } finally {
      await r.close();
    }
  });

  it('answers 400 to what is not an OTLP JSON trace export, and says why', async () => {
    const r = await startOtlpReceiver();
    try {
      expect(await post(r, '/v1/traces', '{not json')).toBe(400);
      expect(await post(r, '/v1/metrics', JSON.stringify(EXPORT))).toBe(400);
      expect(r.problems).toHaveLength(2);
      expect(r.problems[1]).toBe('not an OTLP trace export: POST /v1/metrics');
      expect(r.spans()).toEqual([]);
    } finally {
      await r.close();
    }
  });

  it('waits for a span to arrive, and names what did when none does', async () => {
    const r = await startOtlpReceiver();
    try {
      const waiting = r.waitForSpan((s) => s.name === 'provider.create', 5_000);
      await post(r, '/v1/traces', JSON.stringify(EXPORT));
      expect((await waiting).spanId).toBe('eee19b7ec3c1b175');
      await expect(r.waitForSpan((s) => s.name === 'provider.delete', 100)).rejects.toThrow(
        'no such span within 100 ms; received: proxy.reconcile, provider.create',
      );
    } finally {
      await r.close();
    }
  });
});

let ids = 0;

/** A span of trace `t` (its attributes as given), under `parent` when given. */
function span(
  name: string,
  parent?: ReceivedSpan,
  attributes: Record<string, string> = {},
  t = TRACE,
): ReceivedSpan {
  return {
    traceId: t,
    spanId: (++ids).toString(16).padStart(16, '0'),
    parentSpanId: parent?.spanId ?? '',
    name,
    kind: name.startsWith('lab.') ? 3 : 1,
    attributes,
    events: [],
    status: { code: 0 },
    scope: 'test',
    resource: {},
  };
}

function op(name: 'create' | 'delete', parent: ReceivedSpan, extra: Record<string, string> = {}) {
  return span(`provider.${name}`, parent, {
    'proxy_op.provider.name': 'lab',
    'proxy_op.provider.type': 'memory',
    'proxy_op.operation': name,
    ...(name === 'create'
      ? { 'proxy_op.instance.name': 'web' }
      : { 'proxy_op.instance.id': 'vms/1' }),
    ...extra,
  });
}

const WANT = {
  provider: 'lab',
  type: 'memory',
  callPrefix: 'lab.',
  operations: ['create', 'delete'] as const,
  root: 'proxy.reconcile',
  instanceId: 'vms/1',
};

describe('SpanTree', () => {
  it('links parents, children, descendants, ancestors and roots, and finds orphans', () => {
    const root = span('proxy.reconcile');
    const create = op('create', root);
    const call = span('lab.insert', create);
    const nested = span('lab.dial', call);
    const orphan = { ...span('lab.lost'), parentSpanId: 'ffffffffffffffff' };
    const other = span('proxy.reconcile', undefined, {}, 'a'.repeat(32));
    const tree = new SpanTree([root, create, call, nested, orphan, other]);
    expect(tree.parentOf(call)).toBe(create);
    expect(tree.parentOf(root)).toBeUndefined();
    expect(tree.childrenOf(create)).toEqual([call]);
    expect(tree.descendantsOf(root)).toEqual([create, call, nested]);
    expect(tree.ancestorsOf(nested)).toEqual([call, create, root]);
    expect(tree.rootOf(nested)).toBe(root);
    expect(tree.rootOf(root)).toBe(root);
    expect(tree.named('proxy.reconcile')).toEqual([root, other]);
    expect(tree.orphans()).toEqual([orphan]);
  });
});

describe('providerTraceReport', () => {
  it('finds nothing wrong with operation spans under their root and calls beneath them, and a Get that found nothing', () => {
    const r1 = span('proxy.reconcile');
    const create = op('create', r1);
    const insert = span('lab.insert', create);
    const inner = span('inner', create);
    const dial = span('lab.dial', inner);
    const r2 = span('proxy.reconcile', undefined, {}, 'b'.repeat(32));
    const del = { ...op('delete', r2), traceId: r2.traceId };
    const remove = { ...span('lab.remove', del), traceId: r2.traceId };
    // A Get that finds nothing after the Delete fails, and that is no problem.
    const gone = {
      ...span('provider.get', r2, {
        'proxy_op.provider.name': 'lab',
        'proxy_op.provider.type': 'memory',
        'proxy_op.operation': 'get',
        'proxy_op.instance.id': 'vms/1',
        'proxy_op.error.class': 'NotFound',
      }),
      traceId: r2.traceId,
      status: { code: 2, message: 'PROVIDER_NOT_FOUND' },
    };
    const report = providerTraceReport(
      [r1, create, insert, inner, dial, r2, del, remove, gone],
      WANT,
    );
    expect(report.problems).toEqual([]);
    expect(report.operations.create.map((o) => o.calls.map((c) => c.name))).toEqual([
      ['lab.insert', 'lab.dial'],
    ]);
    expect(report.operations.delete[0]?.calls).toEqual([remove]);
  });

  it('names each thing that does not hold', () => {
    const root = span('proxy.reconcile');
    const create = op('create', root, { 'proxy_op.provider.type': 'other' });
    const gc = span('gc.pass');
    const bare = op('delete', gc, { 'proxy_op.instance.id': 'vms/2' });
    const failed = {
      ...op('create', root, { 'proxy_op.error.class': 'Transient' }),
      status: { code: 2, message: 'PROVIDER_TRANSIENT' },
    };
    const loose = span('lab.list');
    const lost = { ...span('lab.get'), parentSpanId: 'ffffffffffffffff' };
    const report = providerTraceReport(
      [root, create, span('lab.insert', create), gc, bare, failed, loose, lost],
      WANT,
    );
    const at = (s: ReceivedSpan) => `${s.name} ${s.spanId}`;
    expect(report.problems).toEqual([
      `${at(create)}: proxy_op.provider.type "other", not "memory"`,
      `${at(failed)}: failed ("Transient", PROVIDER_TRANSIENT)`,
      `${at(failed)}: no backend call (lab.*) beneath it`,
      `${at(bare)}: proxy_op.instance.id "vms/2", not "vms/1"`,
      `${at(bare)}: its trace's root is gc.pass, not proxy.reconcile`,
      `${at(bare)}: no backend call (lab.*) beneath it`,
      `${at(loose)}: not beneath an operation span`,
      `${at(lost)}: not beneath an operation span`,
      `${at(lost)}: its parent ffffffffffffffff was never received`,
    ]);
  });

  it('says when an operation has no span of the provider at all', () => {
    const root = span('proxy.reconcile');
    const create = op('create', root);
    const someoneElse = op('delete', root, { 'proxy_op.provider.name': 'other' });
    const report = providerTraceReport(
      [root, create, span('lab.insert', create), someoneElse],
      WANT,
    );
    expect(report.problems).toEqual(['no provider.delete span of lab']);
  });
});
