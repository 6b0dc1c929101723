/**
 * The errors section of the conformance suite (§5).
 *
 * @module
 */
import type { ErrorClass } from '@proxy-op/contract';
import {
  type ConformanceOptions,
  classOf,
  outcome,
  rejection,
  required,
  settleWithin,
  test,
} from '../support.js';

/** Errors (§5): the classify table, every error names the provider and the operation, malformed answers, budgets. */
export function describeErrorConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  const { profile } = opts;
  opts.vitest.describe('errors', () => {
    test(opts, 'the classify table', async (t) => {
      const cases = t.harness.classifyCases;
      const need: ErrorClass[] = ['NotFound', 'Transient', 'Permanent'];
      if (profile.quota === 'detected') need.push('QuotaExceeded');
      for (const cls of need) {
        expect(
          cases.some((c) => c.want === cls),
          `the table has a ${cls} row`,
        ).toBe(true);
      }
      if (profile.quota === 'absent') {
        expect(
          cases.filter((c) => c.want === 'QuotaExceeded').map((c) => c.name),
          'QuotaExceeded rows of a provider whose quota is absent',
        ).toEqual([]);
      }
      for (const c of cases) {
        expect(t.harness.classify(c.op, c.error), `classify: ${c.name}`).toBe(c.want);
      }
      expect(t.harness.classify('get', new Error('never seen before')), 'unknown failures').toBe(
        'Transient',
      );
    });

    test(opts, 'errors carry the configured provider name and the operation', async (t) => {
      const id = await t.provider.create(t.request());
      const calls = [
        ['get', () => t.provider.get(`${id}/extra`)],
        ['delete', () => t.provider.delete(`${id}/extra`)],
        [
          'create',
          () =>
            t.provider.create(
              t.request({ placement: t.harness.invalidPlacements[0]?.placement ?? {} }),
            ),
        ],
      ] as const;
      for (const [op, call] of calls) {
        const err = await rejection(call());
        expect(classOf(err), `class of the ${op} refusal`).toBe('Permanent');
        expect((err as { provider: string }).provider, `provider named by the ${op} error`).toBe(
          t.provider.name,
        );
        expect((err as { op: string }).op, `operation named by the ${op} error`).toBe(op);
      }
    });

    const ops = [
      'create',
      'get',
      'delete',
      ...(profile.listPartial === 'omit-unreachable' ? [] : ['list']),
    ] as const;
    test(
      opts,
      'a malformed backend answer is a Transient error of the provider and operation',
      async (t) => {
        const id = await t.provider.create(t.request());
        for (const op of ops) {
          t.logs.clear();
          t.harness.injectMalformed();
          const call: Promise<unknown> =
            op === 'create'
              ? t.provider.create(t.request())
              : op === 'get'
                ? t.provider.get(id)
                : op === 'delete'
                  ? t.provider.delete(id)
                  : t.provider.listByTag();
          expect(await outcome(call), `class of a malformed answer to ${op}`).toBe('Transient');
          const err = await rejection(call);
          expect(
            (err as { provider: string }).provider,
            `provider named after a malformed ${op} answer`,
          ).toBe(t.provider.name);
          expect((err as { op: string }).op, `operation named after a malformed ${op} answer`).toBe(
            op,
          );
          const line = t.logs.lines.find((l) => l.msg === `provider ${op} failed`);
          expect(line?.fields.errorClass, `the outcome line of a malformed ${op} answer`).toBe(
            'Transient',
          );
        }
        expect(
          (await t.provider.get(id)).id,
          'the instance after a malformed answer to delete',
        ).toBe(id);
      },
    );

    if (profile.timeouts === 'per-call') {
      test(opts, 'a backend call that never answers fails within its budget', async (t) => {
        const budget = required(
          t.harness.callBudgetMs,
          'the harness names callBudgetMs (profile.timeouts is per-call)',
        );
        const id = await t.provider.create(t.request());
        const gate = t.harness.blockCalls(0);
        try {
          const r = await settleWithin(t.provider.get(id), budget * 3 + 2_000);
          expect(r.state, `Get with a call that never answers, budget ${budget} ms`).toBe(
            'rejected',
          );
          if (r.state === 'rejected') {
            expect(classOf(r.error), 'class of a call past its budget').toBe('Transient');
          }
        } finally {
          gate.release();
        }
      });
    }
  });
}
