import { isIPv4 } from 'node:net';
import { type ErrorClass, SpanName } from '@proxy-op/contract';
import {
  abortWhileBlocked,
  type ConformanceOptions,
  classOf,
  collect,
  everythingIn,
  rejection,
  settleWithin,
  type TestContext,
  test,
  within,
} from './support.js';

const SENTINEL_CLOUD_INIT =
  '#cloud-config\n# CLOUDINIT-SENTINEL-5b1e-never-log-me\nruncmd: [true]\n';

/**
 * Create (§2.1): idempotence, placement checked before any backend call,
 * never-started instances, and cloud-init kept out of every log, span and
 * error.
 */
export function describeCreateConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  opts.vitest.describe('Create', () => {
    test(opts, 'repeat Create returns the same ID and creates nothing', async (t) => {
      const req = t.request();
      const id = await t.provider.create(req);
      const count = await t.harness.instanceCount();
      expect(await t.provider.create(req)).toBe(id);
      expect(await t.harness.instanceCount()).toBe(count);
      expect((await t.provider.get(id)).uid).toBe(req.uid);
    });

    test(opts, 'Create checks placement before any backend call', async (t) => {
      expect(
        t.harness.invalidPlacements.length,
        'the harness lists invalid placements',
      ).toBeGreaterThan(0);
      for (const { placement, field } of t.harness.invalidPlacements) {
        const before = t.harness.backendCalls();
        const err = await rejection(t.provider.create(t.request({ placement })));
        expect(classOf(err), JSON.stringify(placement)).toBe('Permanent');
        expect((err as Error).message, JSON.stringify(placement)).toContain(field);
        expect(t.harness.backendCalls(), `backend calls for ${JSON.stringify(placement)}`).toBe(
          before,
        );
      }
    });

    test(opts, 'a never-started instance is never Stopped', async (t) => {
      const id = await t.harness.plantNeverStarted(t.request());
      const got = await settleWithin(t.provider.get(id), 10_000);
      if (got.state === 'resolved') expect(got.value.state).not.toBe('Stopped');
      else if (got.state === 'rejected') expect(classOf(got.error)).toBe('Transient');
      else throw new Error('get did not answer within 10 s');
      const created = await t.provider.create(t.request());
      expect((await t.provider.get(created)).state).not.toBe('Stopped');
    });

    test(opts, 'cloud-init never reaches logs, spans or errors', async (t) => {
      const cloudInit = new TextEncoder().encode(SENTINEL_CLOUD_INIT);
      const secret = 'CLOUDINIT-SENTINEL-5b1e-never-log-me';
      const errors: unknown[] = [];
      const req = t.request({ cloudInit });
      const id = await t.provider.create(req);
      await t.provider.create(req);
      await t.provider.get(id);
      await t.provider.listByTag();
      for (const { placement } of t.harness.invalidPlacements) {
        await collect(errors, t.provider.create(t.request({ cloudInit, placement })));
      }
      const foreign = t.request({ cloudInit });
      await t.harness.plantMarked(foreign.name, { uid: 'someone-else', installation: 'default' });
      await collect(errors, t.provider.create(foreign));
      const cancelled = await abortWhileBlocked(t, 0, 'create', (signal) =>
        t.provider.create(t.request({ cloudInit }), { signal }),
      );
      if (cancelled.state === 'rejected') errors.push(cancelled.error);
      else await collect(errors, cancelled.promise);
      await t.provider.delete(id);
      expect(errors.length).toBeGreaterThan(0);
      for (const err of errors) expect(everythingIn(err)).not.toContain(secret);
      expect(t.logs.text()).not.toContain(secret);
      expect(t.spans.text()).not.toContain(secret);
    });
  });
}

/** Get (§2.2): read-back, states, IPs, locks, deletes in progress, malformed IDs. */
export function describeGetConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  opts.vitest.describe('Get', () => {
    test(opts, 'Get after Delete is NotFound', async (t) => {
      const id = await t.provider.create(t.request());
      await t.provider.delete(id);
      await expectGone(t, id, opts);
    });

    test(opts, 'malformed IDs are Permanent from Get and Delete', async (t) => {
      const id = await t.provider.create(t.request());
      const malformed = [
        '',
        '/',
        'x',
        '../../etc/passwd',
        `${id}/extra`,
        `extra/${id}`,
        `${id}/`,
        `/${id}`,
      ];
      for (const bad of malformed) {
        const before = t.harness.backendCalls();
        expect(classOf(await rejection(t.provider.get(bad))), `get(${JSON.stringify(bad)})`).toBe(
          'Permanent',
        );
        expect(
          classOf(await rejection(t.provider.delete(bad))),
          `delete(${JSON.stringify(bad)})`,
        ).toBe('Permanent');
        expect(t.harness.backendCalls(), `backend calls for ${JSON.stringify(bad)}`).toBe(before);
      }
      expect((await t.provider.get(id)).id).toBe(id);
    });

    test(opts, 'an unknown backend state maps to Stopped', async (t) => {
      const id = await t.provider.create(t.request());
      await t.harness.setState(id, 'unknown');
      const inst = await t.provider.get(id);
      expect(inst.state).toBe('Stopped');
      expect(inst.ip).toBeUndefined();
    });

    test(opts, 'Running requires an IP', async (t) => {
      const id = await t.provider.create(t.request());
      await t.harness.setRunning(id, undefined);
      const without = await t.provider.get(id);
      expect(without.state).not.toBe('Running');
      expect(without.ip).toBeUndefined();
      await t.harness.setRunning(id, '10.20.30.40');
      const withIp = await t.provider.get(id);
      expect(withIp.state).toBe('Running');
      expect(withIp.ip).toBe('10.20.30.40');
      expect(isIPv4(withIp.ip ?? '')).toBe(true);
    });

    test(opts, 'UID and CreatedAt are read back from the backend', async (t) => {
      const req = t.request();
      const id = await t.provider.create(req);
      const first = await t.provider.get(id);
      expect(first.uid).toBe(req.uid);
      expect(first.createdAt).toBeInstanceOf(Date);
      expect(Number.isNaN(first.createdAt.getTime())).toBe(false);
      const when = new Date('2020-01-02T03:04:05Z');
      await t.harness.rewriteMark(id, {
        uid: 'rewritten-behind-the-providers-back',
        createdAt: when,
      });
      const again = await t.provider.get(id);
      expect(again.uid).toBe('rewritten-behind-the-providers-back');
      if (opts.profile.createdAt === 'written-at-create')
        expect(again.createdAt.getTime()).toBe(when.getTime());
    });

    if (opts.profile.asyncOps.length > 0) {
      test(
        opts,
        'Get during a backend lock or async operation is Transient, never NotFound',
        async (t) => {
          const id = await t.provider.create(t.request());
          expect(
            t.harness.holdLock,
            'the harness implements holdLock (profile.asyncOps is not empty)',
          ).toBeTypeOf('function');
          const release = await t.harness.holdLock!(id);
          try {
            expect(classOf(await rejection(t.provider.get(id)))).toBe('Transient');
          } finally {
            await release();
          }
          expect((await t.provider.get(id)).id).toBe(id);
        },
      );
    }

    test(opts, 'Get during an in-progress Delete still returns the instance', async (t) => {
      const id = await t.provider.create(t.request());
      const gate = t.harness.holdNextDelete(id);
      const deleting = t.provider.delete(id);
      deleting.catch(() => {});
      try {
        expect(await within(gate.reached, 10_000), 'the delete reached the held step').toBe(true);
        const inst = await t.provider.get(id);
        expect(inst.id).toBe(id);
      } finally {
        gate.release();
      }
      await deleting;
      await expectGone(t, id, opts);
    });
  });
}

/** Delete (§2.3): idempotence and nothing left behind. */
export function describeDeleteConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  opts.vitest.describe('Delete', () => {
    test(opts, 'Delete twice succeeds', async (t) => {
      const id = await t.provider.create(t.request());
      await t.provider.delete(id);
      await t.provider.delete(id);
      await expectGone(t, id, opts);
      await t.provider.delete(id);
    });

    if (opts.profile.deleteReturn === 'waits') {
      test(opts, 'when Delete returns, nothing it created is left', async (t) => {
        const before = await t.harness.instanceCount();
        const id = await t.provider.create(t.request());
        expect(await t.harness.instanceCount()).toBe(before + 1);
        await t.provider.delete(id);
        expect(await t.harness.instanceCount()).toBe(before);
      });
    }
  });
}

/** ListByTag (§2.4, §13): what is listed, and installations kept apart. */
export function describeListConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  opts.vitest.describe('ListByTag', () => {
    test(opts, 'ListByTag returns created instances with ID, UID and CreatedAt', async (t) => {
      const req = t.request();
      const id = await t.provider.create(req);
      const found = (await t.provider.listByTag()).find((i) => i.id === id);
      expect(found, `${id} is listed`).toBeDefined();
      expect(found?.uid).toBe(req.uid);
      expect(Number.isNaN(found?.createdAt.getTime())).toBe(false);
    });

    test(opts, 'ListByTag excludes unmarked instances and includes an empty UID', async (t) => {
      await t.provider.create(t.request());
      const before = await t.provider.listByTag();
      await t.harness.plantUnmarked(t.request().name);
      expect(await t.provider.listByTag()).toHaveLength(before.length);
      await t.harness.plantMarked(t.request().name, { uid: '', installation: 'default' });
      const after = await t.provider.listByTag();
      expect(after).toHaveLength(before.length + 1);
      expect(after.some((i) => i.uid === '')).toBe(true);
    });

    test(opts, 'the installation mark keeps two installations apart', async (t) => {
      const a = await t.provider.create(t.request({ installation: 'inst-a' }));
      const b = await t.provider.create(t.request({ installation: 'inst-b' }));
      const ids = async (installation?: string) =>
        (await t.provider.listByTag(installation === undefined ? {} : { installation })).map(
          (i) => i.id,
        );
      const listA = await ids('inst-a');
      const listB = await ids('inst-b');
      expect(listA).toContain(a);
      expect(listA).not.toContain(b);
      expect(listB).toContain(b);
      expect(listB).not.toContain(a);
      const listDefault = await ids();
      expect(listDefault).not.toContain(a);
      expect(listDefault).not.toContain(b);
      await t.harness.plantMarked(t.request().name, { uid: 'legacy-uid' });
      expect((await t.provider.listByTag()).some((i) => i.uid === 'legacy-uid')).toBe(true);
      expect(
        (await t.provider.listByTag({ installation: 'inst-a' })).some(
          (i) => i.uid === 'legacy-uid',
        ),
      ).toBe(false);
    });
  });
}

/** Adoption (§2.1): only our own instance is adopted. */
export function describeAdoptionConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  opts.vitest.describe('adoption', () => {
    const refuses = (
      what: string,
      plant: (t: TestContext, name: string, uid: string) => Promise<void>,
    ) =>
      test(opts, `Create refuses ${what}`, async (t) => {
        const req = t.request();
        await plant(t, req.name, req.uid);
        const count = await t.harness.instanceCount();
        const err = await rejection(t.provider.create(req));
        expect(classOf(err)).toBe('Permanent');
        expect((err as Error).message).toContain(req.name);
        expect(await t.harness.instanceCount()).toBe(count);
      });
    refuses('an instance with another UID', (t, name) =>
      t.harness.plantMarked(name, { uid: 'someone-else', installation: 'default' }),
    );
    refuses('an unmarked instance with the same name', (t, name) => t.harness.plantUnmarked(name));
    refuses("another installation's instance", (t, name, uid) =>
      t.harness.plantMarked(name, { uid, installation: 'other-installation' }),
    );

    test(opts, 'Create adopts our instance with an empty UID', async (t) => {
      const req = t.request();
      await t.harness.plantMarked(req.name, { uid: '', installation: 'default' });
      const count = await t.harness.instanceCount();
      const id = await t.provider.create(req);
      expect(await t.harness.instanceCount()).toBe(count);
      expect((await t.provider.get(id)).id).toBe(id);
    });
  });
}

type Method = 'create' | 'get' | 'delete' | 'listByTag';

/** Cancellation (§1.5): every method returns promptly when its signal fires. */
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
        const pre = await settleWithin(call(t, m, AbortSignal.abort(), id), t.promptMs);
        expect(pre.state, `${m} with an already-fired signal`).toBe('rejected');
        if (pre.state === 'rejected') expect(classOf(pre.error)).toBe('Transient');

        const r = await abortWhileBlocked(t, 0, m, (signal) => call(t, m, signal, id));
        expect(r.state, `${m} settled within ${t.promptMs} ms of the abort`).toBe('rejected');
        if (r.state === 'rejected') expect(classOf(r.error)).toBe('Transient');
        expect((await t.provider.get(id)).id, 'the provider still works').toBe(id);
      });
    }

    for (const m of ['create', 'delete'] as const) {
      test(opts, `a cancelled signal returns promptly from ${m} mid-operation`, async (t) => {
        const req = t.request();
        const id = m === 'delete' ? await t.provider.create(req) : '';
        const r = await abortWhileBlocked<unknown>(t, 1, m, (signal) =>
          m === 'create' ? t.provider.create(req, { signal }) : t.provider.delete(id, { signal }),
        );
        expect(r.state, `${m} settled within ${t.promptMs} ms of the abort`).toBe('rejected');
        if (r.state === 'rejected') expect(classOf(r.error)).toBe('Transient');
        if (m === 'create') {
          const again = await t.provider.create(req);
          expect((await t.provider.get(again)).uid).toBe(req.uid);
        } else {
          await t.provider.delete(id);
          await expectGone(t, id, opts);
        }
      });
    }

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

/** Errors (§5): the classify table, and every error names the provider and the operation. */
export function describeErrorConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  opts.vitest.describe('errors', () => {
    test(opts, 'the classify table', async (t) => {
      const cases = t.harness.classifyCases;
      const need: ErrorClass[] = ['NotFound', 'Transient', 'Permanent'];
      if (opts.profile.quota === 'detected') need.push('QuotaExceeded');
      for (const cls of need) {
        expect(
          cases.some((c) => c.want === cls),
          `the table has a ${cls} row`,
        ).toBe(true);
      }
      for (const c of cases) expect(t.harness.classify(c.op, c.error), c.name).toBe(c.want);
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
        expect(classOf(err)).toBe('Permanent');
        expect((err as { provider: string }).provider, op).toBe(t.provider.name);
        expect((err as { op: string }).op).toBe(op);
      }
    });
  });
}

/** The Checker (§3): order, reasons, its signal, no secrets. */
export function describeCheckerConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
  opts.vitest.describe('Checker', () => {
    test(opts, 'the provider has a Checker exactly when it says so', async (t) => {
      expect(typeof t.provider.check === 'function').toBe(opts.checker);
    });
    if (!opts.checker) return;

    test(opts, 'the Checker answers once per target, in config order', async (t) => {
      const targets = t.harness.checkTargets ?? [];
      expect(targets.length, 'the harness names the targets').toBeGreaterThan(0);
      if (targets.length > 1) t.harness.delayTarget?.(targets[0] as string, 50);
      for (let i = 0; i < 3; i++) {
        const results = await t.provider.check!();
        expect(results.map((r) => r.target)).toEqual(targets);
        for (const r of results) {
          expect(typeof r.address).toBe('string');
          expect(typeof r.message).toBe('string');
          expect(typeof r.details).toBe('object');
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
            expect(r.reason, `${s.name}: ${r.target}`).toBe(s.want);
            expect(r.ready, `${s.name}: ${r.target}`).toBe(s.want === 'Reachable');
          }
        } finally {
          await fx?.cleanup?.();
        }
      }
    });

    test(opts, 'the Checker answers Timeout promptly when its signal fires', async (t) => {
      const targets = t.harness.checkTargets ?? [];
      const pre = await settleWithin(
        t.provider.check!({ signal: AbortSignal.abort() }),
        t.promptMs,
      );
      expect(pre.state).toBe('resolved');
      if (pre.state === 'resolved') {
        expect(pre.value.map((r) => r.reason)).toEqual(targets.map(() => 'Timeout'));
      }
      const r = await abortWhileBlocked(t, 0, 'check', (signal) => t.provider.check!({ signal }));
      expect(r.state, `check settled within ${t.promptMs} ms`).toBe('resolved');
      if (r.state === 'resolved') {
        expect(r.value.map((x) => x.target)).toEqual(targets);
        for (const x of r.value) {
          expect(x.reason).toBe('Timeout');
          expect(x.ready).toBe(false);
        }
      }
    });
  });
}

/** Observability (§9) and credentials (§7). */
export function describeObservabilityConformance(opts: ConformanceOptions): void {
  const { expect } = opts.vitest;
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
        for (const c of children) expect(c.spanContext().traceId).toBe(op?.spanContext().traceId);
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
        expect(roots.length).toBeGreaterThan(0);
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
      expect(loud.map((l) => l.msg)).toEqual([]);
      for (const op of ['create', 'get', 'list', 'delete']) {
        const lines = t.logs.lines.filter((l) => l.msg === `provider ${op} succeeded`);
        expect(lines, `outcome lines for ${op}`).toHaveLength(1);
        expect(lines[0]?.level).toBe('debug');
        expect(lines[0]?.fields.traceId, `traceId on the ${op} outcome line`).toMatch(
          /^[0-9a-f]{32}$/,
        );
      }
    });

    if (opts.profile.credentials !== 'none') {
      test(opts, 'the credential never reaches logs, spans or errors', async (t) => {
        const secret = t.harness.credentialSentinel;
        expect(secret, 'the harness exposes the credential sentinel').toBeTruthy();
        expect(t.harness.rejectCredential, 'the harness can make the backend refuse it').toBeTypeOf(
          'function',
        );
        const id = await t.provider.create(t.request());
        await t.harness.rejectCredential!();
        const errors: unknown[] = [];
        await collect(errors, t.provider.create(t.request()));
        await collect(errors, t.provider.get(id));
        await collect(errors, t.provider.listByTag());
        await collect(errors, t.provider.delete(id));
        expect(errors.length, 'calls with a refused credential fail').toBeGreaterThan(0);
        for (const err of errors) {
          expect(classOf(err)).toBe('Permanent');
          expect(everythingIn(err)).not.toContain(secret);
        }
        if (opts.checker) {
          const results = await t.provider.check!();
          expect(results.every((r) => r.reason === 'Unauthorized')).toBe(true);
          expect(JSON.stringify(results)).not.toContain(secret);
        }
        expect(t.logs.text()).not.toContain(secret);
        expect(t.spans.text()).not.toContain(secret);
      });
    }
  });
}

async function expectGone(t: TestContext, id: string, opts: ConformanceOptions): Promise<void> {
  const deadline = Date.now() + (opts.profile.deleteReturn === 'returns-early' ? 20_000 : 0);
  for (;;) {
    await t.harness.settle?.();
    const err = await t.provider.get(id).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (err !== undefined && classOf(err) === 'NotFound') return;
    if (Date.now() >= deadline) {
      throw new Error(
        `get(${id}) after delete: expected NotFound, got ${err === undefined ? 'the instance' : classOf(err)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
