/**
 * The cancellation section of the conformance suite (§1.5).
 *
 * @module
 */
import {
  abortWhileBlocked,
  type ConformanceOptions,
  classOf,
  counts,
  expectGone,
  settleWithin,
  type TestContext,
  test,
  uidOf,
} from '../support.js';

type Method = 'create' | 'get' | 'delete' | 'listByTag';

/** The most backend calls one Create may make before the kit stops cancelling it step by step. */
const MAX_CREATE_STEPS = 64;

/** Cancellation (§1.5): every method returns promptly when its signal fires, and leaves nothing half-made. */
export function describeCancellationConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  opts.vitest.describe('cancellation', () => {
    const call = async (
      t: TestContext,
      m: Method,
      signal: AbortSignal,
      id: string,
    ): Promise<unknown> => {
      switch (m) {
        case 'create':
          return t.provider.create(t.request(), { signal });
        case 'get':
          return t.provider.get(id, { signal });
        case 'delete':
          return t.provider.delete(id, { signal });
        case 'listByTag':
          return t.provider.listByTag({ signal });
      }
    };

    for (const m of ['create', 'get', 'delete', 'listByTag'] as const) {
      test(opts, `a cancelled signal returns promptly from ${m}`, async (t) => {
        const id = await t.provider.create(t.request());
        const before = await counts(t);
        const pre = await settleWithin(call(t, m, AbortSignal.abort(), id), t.promptMs);
        expect(pre.state, `${m} with an already-fired signal`).toBe('rejected');
        if (pre.state === 'rejected') {
          expect(classOf(pre.error), `class of ${m} with an already-fired signal`).toBe(
            'Transient',
          );
        }
        const after = await counts(t);
        expect(after.calls, `backend calls of ${m} with an already-fired signal`).toBe(
          before.calls,
        );
        expect(after.instances, `instances after ${m} with an already-fired signal`).toBe(
          before.instances,
        );

        const r = await abortWhileBlocked(t, 0, m, (signal) => call(t, m, signal, id));
        expect(r.state, `${m} settled within ${t.promptMs} ms of the abort`).toBe('rejected');
        if (r.state === 'rejected') {
          expect(classOf(r.error), `class of ${m} cancelled at its first call`).toBe('Transient');
        }
        expect((await t.provider.get(id)).id, 'the provider still works').toBe(id);
      });
    }

    test(
      opts,
      'Create cancelled at each of its backend calls, then retried, leaves exactly one instance',
      async (t) => {
        const baseline = await counts(t);
        let finished = false;
        for (let k = 0; k < MAX_CREATE_STEPS && !finished; k++) {
          await t.round(
            `round ${k + 1} (Create cancelled at backend call ${k + 1}, retried, deleted)`,
            async () => {
              const req = t.request();
              const before = await counts(t);
              const r = await abortWhileBlocked(
                t,
                k,
                'create',
                (signal) => t.provider.create(req, { signal }),
                true,
              );
              if (!r.reached) {
                finished = true;
                expect(r.state, `Create with nothing held after ${k} calls`).toBe('resolved');
              } else {
                expect(r.state, `Create cancelled at backend call ${k + 1} settled promptly`).toBe(
                  'rejected',
                );
                if (r.state === 'rejected') {
                  expect(
                    classOf(r.error),
                    `class of Create cancelled at backend call ${k + 1}`,
                  ).toBe('Transient');
                }
              }
              const retry = await t.provider.create(req).then(
                (id) => ({ id, error: undefined }),
                (error: unknown) => ({ id: '', error }),
              );
              expect(
                retry.error === undefined
                  ? 'resolved'
                  : `${classOf(retry.error)}: ${String(retry.error)}`,
                `the retry after cancelling at call ${k + 1}`,
              ).toBe('resolved');
              const { id } = retry;
              expect(await uidOf(t, id), `the UID after retrying at call ${k + 1}`).toBe(req.uid);
              if (t.profile.readiness === 'immediate') {
                expect(
                  (await t.provider.get(id)).state,
                  `the state after retrying at call ${k + 1} (immediate readiness)`,
                ).toBe('Running');
              }
              const made = await counts(t);
              expect(
                made.instances,
                `instances after cancelling at backend call ${k + 1} and retrying`,
              ).toBe(before.instances + 1);
              await t.provider.delete(id);
              await expectGone(t, id);
              const after = await counts(t);
              expect(after.instances, `instances left after cancelling at call ${k + 1}`).toBe(
                baseline.instances,
              );
              expect(
                after.secondary,
                `secondary resources left after cancelling at call ${k + 1}`,
              ).toBe(baseline.secondary);
            },
          );
        }
        expect(finished, `Create finishes within ${MAX_CREATE_STEPS} backend calls`).toBe(true);
      },
      MAX_CREATE_STEPS,
    );

    test(opts, 'a cancelled signal returns promptly from delete mid-operation', async (t) => {
      const id = await t.provider.create(t.request());
      const r = await abortWhileBlocked<unknown>(t, 1, 'delete', (signal) =>
        t.provider.delete(id, { signal }),
      );
      expect(r.state, `delete settled within ${t.promptMs} ms of the abort`).toBe('rejected');
      if (r.state === 'rejected') {
        expect(classOf(r.error), 'class of delete cancelled half-way').toBe('Transient');
      }
      await t.provider.delete(id);
      await expectGone(t, id);
    });

    test(opts, 'cancelling one call leaves another in flight unharmed', async (t) => {
      const id = await t.provider.create(t.request());
      let other: Promise<unknown> = Promise.resolve();
      const r = await abortWhileBlocked(t, 0, 'get', (signal) => {
        other = t.provider.get(id);
        other.catch(() => {});
        return t.provider.get(id, { signal });
      });
      expect(r.state, 'the cancelled call settles').toBe('rejected');
      const r2 = await settleWithin(other, 10_000);
      expect(r2.state, 'the other call completes').toBe('resolved');
    });
  });
}
