/**
 * The Checker section of the conformance suite (§3).
 *
 * @module
 */
import { abortWhileBlocked, type ConformanceOptions, settleWithin, test } from '../support.js';

/** The Checker (§3): order, reasons, its signal. */
export function describeCheckerConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  opts.vitest.describe('Checker', () => {
    test(opts, 'the provider has a Checker exactly when it says so', async (t) => {
      expect(typeof t.provider.check === 'function', 'the provider has check').toBe(opts.checker);
    });
    if (!opts.checker) return;

    test(opts, 'the Checker answers once per target, in config order', async (t) => {
      const targets = t.harness.checkTargets ?? [];
      expect(targets.length, 'the harness names the targets').toBeGreaterThan(0);
      if (targets.length > 1) t.harness.delayTarget?.(targets[0] as string, 50);
      for (let i = 0; i < 3; i++) {
        const results = await t.provider.check!();
        expect(
          results.map((r) => r.target),
          'the targets of a check round, in order',
        ).toEqual(targets);
        for (const r of results) {
          expect(typeof r.address, 'a target address').toBe('string');
          expect(typeof r.message, 'a target message').toBe('string');
          expect(typeof r.details, 'target details').toBe('object');
        }
      }
    });

    test(opts, 'the Checker gives the reason for each situation', async (t) => {
      const scenarios = t.harness.checkScenarios ?? [];
      expect(
        scenarios.some((s) => s.want === 'Reachable'),
        'a Reachable scenario',
      ).toBe(true);
      expect(
        scenarios.some((s) => s.want !== 'Reachable'),
        'a failing scenario',
      ).toBe(true);
      for (const [i, s] of scenarios.entries()) {
        // Each situation on a fresh provider and backend.
        const fx =
          i === 0
            ? undefined
            : await opts.factory({ logger: t.logs.logger, tracer: t.spans.tracer });
        const harness = fx?.harness ?? t.harness;
        const provider = fx?.provider ?? t.provider;
        try {
          const scenario = harness.checkScenarios?.[i] ?? s;
          await scenario.arrange();
          const results = await provider.check!();
          const judged =
            s.target === undefined ? results : results.filter((r) => r.target === s.target);
          expect(judged.length, s.name).toBeGreaterThan(0);
          for (const r of judged) {
            expect(r.reason, `the reason when ${s.name}: ${r.target}`).toBe(s.want);
            expect(r.ready, `ready when ${s.name}: ${r.target}`).toBe(s.want === 'Reachable');
          }
        } finally {
          await fx?.cleanup?.();
        }
      }
    });

    test(opts, 'the Checker answers Timeout promptly when its signal fires', async (t) => {
      const targets = t.harness.checkTargets ?? [];
      const before = t.harness.backendCalls();
      const pre = await settleWithin(
        t.provider.check!({ signal: AbortSignal.abort() }),
        t.promptMs,
      );
      expect(pre.state, 'a check with an already-fired signal answers').toBe('resolved');
      if (pre.state === 'resolved') {
        expect(
          pre.value.map((r) => r.reason),
          'the reasons with an already-fired signal',
        ).toEqual(targets.map(() => 'Timeout'));
      }
      expect(t.harness.backendCalls(), 'backend calls with an already-fired signal').toBe(before);
      const r = await abortWhileBlocked(t, 0, 'check', (signal) => t.provider.check!({ signal }));
      expect(r.state, `check settled within ${t.promptMs} ms`).toBe('resolved');
      if (r.state === 'resolved') {
        expect(
          r.value.map((x) => x.target),
          'the targets of a cancelled round',
        ).toEqual(targets);
        for (const x of r.value) {
          expect(x.reason, `the reason of ${x.target} in a cancelled round`).toBe('Timeout');
          expect(x.ready, `${x.target} is not ready in a cancelled round`).toBe(false);
        }
      }
    });
  });
}
