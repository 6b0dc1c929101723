// Peer: none (the planner is a pure function); a simulated fleet drives it pass by pass.
import { describe, expect, it } from 'vitest';
import { validatePoolSpec } from '../src/api/pool.js';
import { type Member, planPool } from '../src/pool/plan.js';
import { resolvePoolSpec } from '../src/pool/resolve.js';

const template = { spec: { provider: 'a', allowedSources: ['10.0.0.0/8'] } };

function spec(extra: Record<string, unknown> = {}) {
  const v = validatePoolSpec({ template, ...extra });
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  return resolvePoolSpec(v.value);
}

let serial = 0;
function member(over: Partial<Member> = {}): Member {
  serial++;
  return {
    name: `p-${serial}`,
    uid: `uid-${serial}`,
    created: 0,
    hash: 'h1',
    provider: 'a',
    ready: true,
    readyChanged: 0,
    wasReady: false,
    deleting: false,
    skipRemediation: false,
    remediate: false,
    ...over,
  };
}

/**
 * A fleet the plans act on: created Proxies become Ready `readyAfter` ms
 * later, deleted ones are gone at once. Each step is 1 s. Checks the
 * rollout bounds after every pass.
 */
function simulate(opts: {
  s: ReturnType<typeof spec>;
  hash: string;
  start: Member[];
  readyAfter: (i: number) => number;
  steps: number;
  check?: (ms: Member[], now: number) => void;
}) {
  let members = [...opts.start];
  let now = 1_000_000;
  let made = 0;
  const readyAt = new Map<string, number>();
  for (let step = 0; step < opts.steps; step++) {
    members = members.map((m) =>
      !m.ready && (readyAt.get(m.name) ?? 0) <= now ? { ...m, ready: true, readyChanged: now } : m,
    );
    const plan = planPool({
      spec: opts.s,
      hash: opts.hash,
      members,
      now,
      failingProviders: new Map(),
    });
    const del = new Set(plan.delete);
    members = members
      .filter((m) => !del.has(m.name))
      .map((m) =>
        plan.drain.includes(m.name) ? { ...m, drainingUntil: now + opts.s.drainMs } : m,
      );
    for (const c of plan.create) {
      const m = member({
        hash: opts.hash,
        provider: c.provider,
        created: now,
        ready: false,
        readyChanged: undefined,
      });
      readyAt.set(m.name, now + opts.readyAfter(made++));
      members.push(m);
    }
    opts.check?.(members, now);
    now += 1000;
  }
  return members;
}

describe('the pool planner', () => {
  it('scales from nothing to replicas, then down by the delete policy', () => {
    const s = spec({ replicas: 3 });
    const up = planPool({ spec: s, hash: 'h1', members: [], now: 0, failingProviders: new Map() });
    expect(up.create).toHaveLength(3);
    const ms = [member({ created: 1 }), member({ created: 3 }), member({ created: 2 })];
    const down = planPool({
      spec: spec({ replicas: 1, deletePolicy: 'Newest' }),
      hash: 'h1',
      members: ms,
      now: 10,
      failingProviders: new Map(),
    });
    expect(down.delete).toEqual([ms[1]?.name, ms[2]?.name]);
    const old = planPool({
      spec: spec({ replicas: 2, deletePolicy: 'Oldest' }),
      hash: 'h1',
      members: ms,
      now: 10,
      failingProviders: new Map(),
    });
    expect(old.delete).toEqual([ms[0]?.name]);
  });

  it('takes an unready Proxy first on a scale-down, whatever the policy', () => {
    const ms = [
      member({ created: 5 }),
      member({ created: 1, ready: false }),
      member({ created: 9 }),
    ];
    const p = planPool({
      spec: spec({ replicas: 2, deletePolicy: 'Newest' }),
      hash: 'h1',
      members: ms,
      now: 10,
      failingProviders: new Map(),
    });
    expect(p.delete).toEqual([ms[1]?.name]);
  });

  for (const [replicas, maxSurge, maxUnavailable] of [
    [3, 1, 0],
    [5, '25%', '25%'],
    [4, 0, 1],
    [6, 2, 2],
    [1, 1, 0],
    [10, '50%', 0],
  ] as const) {
    it(`rolls ${replicas} Proxies with maxSurge ${maxSurge}, maxUnavailable ${maxUnavailable} within both bounds at every pass`, () => {
      const s = spec({ replicas, strategy: { maxSurge, maxUnavailable }, rotation: undefined });
      const start = Array.from({ length: replicas }, () => member());
      let sawSurge = 0;
      let minAvail: number = replicas;
      const end = simulate({
        s,
        hash: 'h2',
        start,
        readyAfter: (i) => ((i * 7) % 4) * 1000,
        steps: 60,
        check: (ms) => {
          const total = ms.length;
          const available = ms.filter((m) => m.ready && m.drainingUntil === undefined).length;
          sawSurge = Math.max(sawSurge, total - replicas);
          minAvail = Math.min(minAvail, available);
          expect(total).toBeLessThanOrEqual(replicas + s.maxSurge);
          expect(available).toBeGreaterThanOrEqual(replicas - s.maxUnavailable);
        },
      });
      expect(end.map((m) => m.hash)).toEqual(Array(replicas).fill('h2'));
      expect(end.every((m) => m.ready)).toBe(true);
      // The bounds were used, not just kept: the rollout surged or went below replicas.
      expect(sawSurge > 0 || minAvail < replicas).toBe(true);
    });
  }

  it('refuses both bounds zero, naming the field and the fix', () => {
    const v = validatePoolSpec({ template, strategy: { maxSurge: 0, maxUnavailable: '0%' } });
    expect(v.ok).toBe(false);
    if (!v.ok) {
      expect(v.problems[0]?.path).toBe('spec.strategy');
      expect(v.problems[0]?.message).toContain('maxSurge: 1');
    }
    const bad = validatePoolSpec({
      template: { spec: { provider: 'a', allowedSources: ['1:2:3/64'] } },
    });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.problems[0]?.path).toBe('spec.template.spec.allowedSources[0]');
  });

  it('spec.gateway: defaults filled in, the plan from it, a bad address or session refused by name', async () => {
    const { gatewayPlan } = await import('../src/pool/gateway.js');
    const v = validatePoolSpec({ template, gateway: { enabled: true } });
    expect(v.ok).toBe(true);
    if (!v.ok) return;
    expect(v.value.gateway).toEqual({
      enabled: true,
      port: 3128,
      replicas: 1,
      address: '127.0.0.1',
      session: 'none',
      sessionHeader: 'X-Proxy-Op-Session',
      auth: { type: 'basic' },
    });
    const pool = {
      metadata: { namespace: 'ns', name: 'p', uid: 'u', generation: 1, creationTimestamp: '' },
      spec: v.value,
      status: {},
    };
    // The template's sources when the gateway names none; the drain of the rotation, or 30 s.
    expect(gatewayPlan(pool)).toMatchObject({ allowedSources: ['10.0.0.0/8'], drainSeconds: 30 });
    const off = validatePoolSpec({ template, gateway: { enabled: false } });
    expect(off.ok && gatewayPlan({ ...pool, spec: off.value })).toBe(undefined);
    const address = validatePoolSpec({
      template,
      gateway: { enabled: true, address: 'localhost' },
    });
    expect(address.ok).toBe(false);
    if (!address.ok) {
      expect(address.problems[0]?.path).toBe('spec.gateway.address');
      expect(address.problems[0]?.message).toContain('not an IP address');
    }
    const session = validatePoolSpec({ template, gateway: { session: 'sticky' } });
    expect(session.ok).toBe(false);
    if (!session.ok) expect(session.problems[0]?.path).toBe('spec.gateway.session');
  });

  it('rounds percentages as Kubernetes does: surge up, unavailable down', () => {
    const s = spec({ replicas: 5, strategy: { maxSurge: '25%', maxUnavailable: '25%' } });
    expect(s.maxSurge).toBe(2);
    expect(s.maxUnavailable).toBe(1);
  });

  it('a provider that latched half the pool at once: its Proxies are replaced, not counted as a fleet failing', () => {
    const s = spec({
      replicas: 4,
      spread: [{ provider: 'a' }, { provider: 'b' }],
      remediation: { startupTimeout: '1s' },
    });
    const onA = [1, 2].map(() => member());
    // Made in the same instant, so both pass their startup timeout together.
    const onB = [1, 2].map(() =>
      member({ provider: 'b', ready: false, readyChanged: undefined, latched: true }),
    );
    const refusing = new Map([['b', 'provider b refused Proxy p permanently']]);
    const plan = planPool({
      spec: s,
      hash: 'h1',
      members: [...onA, ...onB],
      now: 1_000,
      failingProviders: refusing,
    });
    expect(plan.shortCircuit).toBe(false);
    expect(plan.remediated, 'one at a time (maxInFlight 1)').toHaveLength(1);
    expect(plan.create).toEqual([{ provider: 'a', index: 0 }]);
    // Without the latch, two of four failing at once is above 40%: nothing is replaced.
    const unknown = planPool({
      spec: s,
      hash: 'h1',
      members: [...onA, ...onB.map((m) => ({ ...m, latched: false }))],
      now: 1_000,
      failingProviders: refusing,
    });
    expect(unknown.shortCircuit).toBe(true);
    expect(unknown.remediated).toEqual([]);
    // When no provider of the spread takes new Proxies, the latched ones count again.
    const nowhere = planPool({
      spec: s,
      hash: 'h1',
      members: [...onA, ...onB],
      now: 1_000,
      failingProviders: new Map([...refusing, ['a', 'provider a is not ready']]),
    });
    expect(nowhere.shortCircuit).toBe(true);
    expect(nowhere.remediated).toEqual([]);
  });

  it('replaces an unhealthy Proxy after unhealthyTimeout, one at a time, and none above maxUnhealthy', () => {
    const s = spec({
      replicas: 5,
      remediation: { unhealthyTimeout: '1m', maxUnhealthy: 2, maxInFlight: 1 },
    });
    const healthy = Array.from({ length: 3 }, () => member());
    const sick = [1, 2].map(() => member({ ready: false, wasReady: true, readyChanged: 0 }));
    const early = planPool({
      spec: s,
      hash: 'h1',
      members: [...healthy, ...sick],
      now: 59_000,
      failingProviders: new Map(),
    });
    expect(early.remediated).toEqual([]);
    expect(early.requeueMs).toBe(1000);
    const due = planPool({
      spec: s,
      hash: 'h1',
      members: [...healthy, ...sick],
      now: 60_000,
      failingProviders: new Map(),
    });
    expect(due.remediated).toHaveLength(1);
    expect(due.create).toHaveLength(1);
    const third = member({ ready: false, wasReady: true, readyChanged: 0 });
    const many = planPool({
      spec: s,
      hash: 'h1',
      members: [...healthy.slice(1), ...sick, third],
      now: 60_000,
      failingProviders: new Map(),
    });
    expect(many.shortCircuit).toBe(true);
    expect(many.remediated).toEqual([]);
    expect(many.delete).toEqual([]);
    // A skip annotation keeps one from being counted for replacement; the remediate annotation replaces at once.
    const skipped = planPool({
      spec: s,
      hash: 'h1',
      members: [...healthy, { ...sick[0], skipRemediation: true } as Member],
      now: 60_000,
      failingProviders: new Map(),
    });
    expect(skipped.remediated).toEqual([]);
    const asked = planPool({
      spec: s,
      hash: 'h1',
      members: [...healthy, { ...member(), remediate: true }],
      now: 1,
      failingProviders: new Map(),
    });
    expect(asked.remediated).toHaveLength(1);
  });

  it('replaces a preempted Proxy as an outdated one, surge first, and never counts it as unhealthy', () => {
    const s = spec({
      replicas: 4,
      strategy: { maxSurge: 1, maxUnavailable: 1 },
      remediation: { unhealthyTimeout: '1m', maxUnhealthy: 1, maxInFlight: 1 },
    });
    const healthy = [member(), member()];
    const taken = [1, 2].map(() =>
      member({ ready: false, wasReady: true, readyChanged: 0, preempted: true }),
    );
    const plan = planPool({
      spec: s,
      hash: 'h1',
      members: [...healthy, ...taken],
      now: 3_600_000,
      failingProviders: new Map(),
    });
    // Two down for an hour, above maxUnhealthy: not a fleet failing, and nothing remediated.
    expect(plan.unhealthy).toBe(0);
    expect(plan.shortCircuit).toBe(false);
    expect(plan.remediated).toEqual([]);
    // A new one within the surge, and one taken back goes (it was not available anyway).
    expect(plan.create).toHaveLength(1);
    expect(plan.delete).toHaveLength(1);
    expect(taken.map((m) => m.name)).toContain(plan.delete[0]);
    // Without room to surge, the taken-back one goes first and its successor follows.
    const tight = planPool({
      spec: spec({ replicas: 4, strategy: { maxSurge: 0, maxUnavailable: 1 } }),
      hash: 'h1',
      members: [...healthy, ...taken],
      now: 3_600_000,
      failingProviders: new Map(),
    });
    expect(tight.create).toEqual([]);
    expect(tight.delete).toHaveLength(1);
    // The same two merely unhealthy are counted, and hold remediation above maxUnhealthy.
    const sick = planPool({
      spec: s,
      hash: 'h1',
      members: [...healthy, ...taken.map((m) => ({ ...m, preempted: false }))],
      now: 3_600_000,
      failingProviders: new Map(),
    });
    expect(sick.unhealthy).toBe(2);
    expect(sick.shortCircuit).toBe(true);
  });

  it('holds remediation during the backoff, and replaces a never-Ready Proxy after startupTimeout', () => {
    const s = spec({ replicas: 2, remediation: { startupTimeout: '2m' } });
    const slow = member({ ready: false, created: 0, readyChanged: undefined });
    const ms = [member(), slow];
    expect(
      planPool({ spec: s, hash: 'h1', members: ms, now: 119_000, failingProviders: new Map() })
        .remediated,
    ).toEqual([]);
    expect(
      planPool({ spec: s, hash: 'h1', members: ms, now: 120_000, failingProviders: new Map() })
        .remediated,
    ).toEqual([slow.name]);
    const held = planPool({
      spec: s,
      hash: 'h1',
      members: ms,
      now: 120_000,
      failingProviders: new Map(),
      remediationBackoffUntil: 130_000,
    });
    expect(held.remediated).toEqual([]);
    expect(held.requeueMs).toBe(10_000);
  });

  it('rotates by age with jitter, make-before-break, at most budget at once', () => {
    const s = spec({
      replicas: 4,
      rotation: { maxAge: '1h', jitter: '20%', budget: 1, drainSeconds: 10 },
    });
    const ms = Array.from({ length: 4 }, () => member({ created: 0 }));
    // The jitter spreads the expiries over the last 20% of the hour.
    const expiries = ms.map((m) => {
      for (let t = 47 * 60_000; t <= 3_600_000; t += 1000) {
        const p = planPool({
          spec: s,
          hash: 'h1',
          members: [m, ...Array.from({ length: 3 }, () => member({ created: t }))],
          now: t,
          failingProviders: new Map(),
        });
        if (p.create.length > 0) return t;
      }
      return undefined;
    });
    expect(new Set(expiries).size).toBe(4);
    for (const t of expiries) expect(t).toBeGreaterThanOrEqual(48 * 60_000);
    // All expired: one is surged for, the others wait; the old one drains once the new one is available.
    const now = 3_600_000;
    const first = planPool({ spec: s, hash: 'h1', members: ms, now, failingProviders: new Map() });
    expect(first.create).toHaveLength(1);
    expect(first.drain).toEqual([]);
    const fresh = member({ created: now, ready: true, readyChanged: now });
    const second = planPool({
      spec: s,
      hash: 'h1',
      members: [...ms, fresh],
      now,
      failingProviders: new Map(),
    });
    expect(second.drain).toHaveLength(1);
    expect(second.create).toHaveLength(0);
  });

  it('spreads by weight and lets the others carry the pool when a provider fails', () => {
    const s = spec({
      replicas: 6,
      spread: [
        { provider: 'a', weight: 2 },
        { provider: 'b', weight: 1 },
      ],
    });
    const p = planPool({ spec: s, hash: 'h1', members: [], now: 0, failingProviders: new Map() });
    const count = (prov: string) => p.create.filter((c) => c.provider === prov).length;
    expect([count('a'), count('b')]).toEqual([4, 2]);
    const down = planPool({
      spec: s,
      hash: 'h1',
      members: [],
      now: 0,
      failingProviders: new Map([['a', 'latched']]),
    });
    expect(down.create.map((c) => c.provider)).toEqual(Array(6).fill('b'));
    const none = planPool({
      spec: s,
      hash: 'h1',
      members: [],
      now: 0,
      failingProviders: new Map([
        ['a', 'x'],
        ['b', 'y'],
      ]),
    });
    expect(none.create).toEqual([]);
    expect(none.unplaced).toBe(6);
  });

  it('creates and deletes nothing while paused', () => {
    const s = spec({ replicas: 3, paused: true });
    const p = planPool({
      spec: s,
      hash: 'h2',
      members: [member()],
      now: 0,
      failingProviders: new Map(),
    });
    expect(p.create).toEqual([]);
    expect(p.delete).toEqual([]);
  });
});
