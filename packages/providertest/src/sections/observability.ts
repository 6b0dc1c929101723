/**
 * The observability section of the conformance suite (§9, and credentials
 * kept out of logs and spans, §7).
 *
 * @module
 */
import { SpanName } from '@proxy-op/contract';
import {
  type ConformanceOptions,
  classOf,
  collect,
  everythingIn,
  leakedIn,
  outcome,
  required,
  test,
} from '../support.js';

/** Observability (§9) and credentials (§7). */
export function describeObservabilityConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  const { profile } = opts;
  opts.vitest.describe('observability', () => {
    test(opts, 'backend calls make child spans under the operation span', async (t) => {
      const id = await t.provider.create(t.request());
      await t.provider.get(id);
      await t.provider.listByTag();
      await t.provider.delete(id);
      const spans = t.spans.spans();
      for (const name of [SpanName.create, SpanName.get, SpanName.list, SpanName.delete]) {
        const op = spans.find((s) => s.name === name);
        expect(op, `a ${name} span`).toBeDefined();
        const children = spans.filter(
          (s) => s.parentSpanContext?.spanId === op?.spanContext().spanId,
        );
        expect(children.length, `child spans under ${name}`).toBeGreaterThan(0);
        for (const c of children) {
          expect(c.spanContext().traceId, `the trace of a child of ${name}`).toBe(
            op?.spanContext().traceId,
          );
        }
      }
    });

    test(
      opts,
      'no root spans but the operation spans (child spans are parent-gated)',
      async (t) => {
        const id = await t.provider.create(t.request());
        await t.provider.get(id);
        await t.provider.delete(id);
        if (opts.checker) await t.provider.check!();
        const allowed: string[] = Object.values(SpanName);
        const roots = t.spans.spans().filter((s) => s.parentSpanContext === undefined);
        expect(roots.length, 'root spans').toBeGreaterThan(0);
        for (const r of roots) expect(allowed, `root span ${r.name}`).toContain(r.name);
      },
    );

    test(opts, 'silent at info; one debug outcome line per operation with traceId', async (t) => {
      const id = await t.provider.create(t.request());
      await t.provider.get(id);
      await t.provider.listByTag();
      await t.provider.delete(id);
      const loud = t.logs.lines.filter(
        (l) => l.level === 'info' || l.level === 'warn' || l.level === 'error',
      );
      expect(
        loud.map((l) => l.msg),
        'lines at info and above',
      ).toEqual([]);
      expect(
        t.logs.lines.filter((l) => l.fields.provider !== t.provider.name).map((l) => l.msg),
        'lines that do not name the provider',
      ).toEqual([]);
      for (const op of ['create', 'get', 'list', 'delete']) {
        const lines = t.logs.lines.filter((l) => l.msg === `provider ${op} succeeded`);
        expect(lines, `outcome lines for ${op}`).toHaveLength(1);
        expect(lines[0]?.level, `the level of the ${op} outcome line`).toBe('debug');
        expect(lines[0]?.fields.traceId, `traceId on the ${op} outcome line`).toMatch(
          /^[0-9a-f]{32}$/,
        );
      }
    });

    if (profile.credentials !== 'none') {
      test(opts, 'the credential never reaches logs, spans or errors', async (t) => {
        const secret = required(
          t.harness.credentialSentinel,
          'the harness exposes the credential sentinel',
        );
        const reject = required(
          t.harness.rejectCredential,
          'the harness can make the backend refuse it',
        );
        const id = await t.provider.create(t.request());
        await reject.call(t.harness);
        const errors: unknown[] = [];
        await collect(errors, t.provider.create(t.request()));
        await collect(errors, t.provider.get(id));
        await collect(errors, t.provider.listByTag());
        await collect(errors, t.provider.delete(id));
        expect(errors.length, 'calls with a refused credential fail').toBe(4);
        for (const err of errors) {
          expect(classOf(err), 'class of a refused credential').toBe('Permanent');
          expect(leakedIn(everythingIn(err), secret), 'the credential in an error').toBe(undefined);
        }
        if (opts.checker) {
          const results = await t.provider.check!();
          expect(
            results.map((r) => r.reason),
            'the Checker with a refused credential',
          ).toEqual(results.map(() => 'Unauthorized'));
          expect(
            leakedIn(JSON.stringify(results), secret),
            'the credential in Checker results',
          ).toBe(undefined);
        }
        expect(leakedIn(t.logs.text(), secret), 'the credential in the logs').toBe(undefined);
        expect(leakedIn(t.spans.text(), secret), 'the credential in the spans').toBe(undefined);
      });
    }

    if (profile.credentials === 'mounted-files') {
      test(opts, 'a rotated credential is read without a restart', async (t) => {
        const reject = required(
          t.harness.rejectCredential,
          'the harness can make the backend refuse the credential',
        );
        const rotate = required(
          t.harness.rotateCredential,
          'the harness implements rotateCredential (profile.credentials is mounted-files)',
        );
        const id = await t.provider.create(t.request());
        await reject.call(t.harness);
        await collect([], t.provider.get(id));
        await rotate.call(t.harness);
        expect(await outcome(t.provider.get(id)), 'Get after the credential was rotated').toBe(
          'resolved',
        );
        const listed = await t.provider.listByTag();
        expect(
          listed.map((i) => i.id),
          'ListByTag after the credential was rotated',
        ).toContain(id);
      });
    }
  });
}
