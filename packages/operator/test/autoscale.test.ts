// Peer: none (the autoscaler's decision and the scale-down choice are pure); a scripted clock.
import { describe, expect, it } from 'vitest';
import { validatePoolSpec } from '../src/api/pool.js';
import {
  type AutoscaleSpec,
  decideReplicas,
  paidPeriodEnd,
  resolveAutoscale,
} from '../src/pool/autoscale.js';
import { parseDemand } from '../src/pool/demand.js';
import { type Member, planPool } from '../src/pool/plan.js';
import { resolvePoolSpec } from '../src/pool/resolve.js';

const template = { spec: { provider: 'a', allowedSources: ['10.0.0.0/8'] } };
const gateway = { enabled: true };

const A: AutoscaleSpec = {
  minReplicas: 0,
  maxReplicas: 8,
  targetInFlight: 10,
  scaleDownAfterMs: 60_000,
};

describe('spec.autoscale', () => {
  it('takes its defaults, and refuses min above max and a pool without a gateway, naming the field', () => {
    const ok = validatePoolSpec({ template, gateway, autoscale: { maxReplicas: 4 } });
    expect(ok.ok).toBe(true);
    if (!ok.ok) return;
    expect(ok.value.autoscale).toEqual({
      minReplicas: 0,
      maxReplicas: 4,
      targetInFlight: 20,
      scaleDownAfter: '5m',
      wakeTimeout: '120s',
      maxWaiting: 1000,
    });
    expect(resolveAutoscale(ok.value.autoscale as never)).toEqual({
      minReplicas: 0,
      maxReplicas: 4,
      targetInFlight: 20,
      scaleDownAfterMs: 300_000,
    });
    const bad = validatePoolSpec({ template, autoscale: { minReplicas: 5, maxReplicas: 4 } });
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.problems).toEqual([
      {
        path: 'spec.autoscale.minReplicas',
        message: 'is 5, above maxReplicas (4); give at most maxReplicas',
      },
      {
        path: 'spec.autoscale',
        message:
          "needs gateway.enabled: true (the demand is what the pool's gateway sees, and it holds requests while the pool wakes from zero)",
      },
    ]);
  });
});

describe('the autoscaler’s decision', () => {
  it('wakes from zero on the first waiting request, and doubles at most per step toward what the demand needs', () => {
    const woke = decideReplicas(A, { replicas: 0 }, { inFlight: 0, waiting: 1 }, 0);
    expect(woke).toMatchObject({ replicas: 1, desired: 1 });
    expect(woke.change).toEqual({
      reason: 'ScaledUp',
      message: '0 → 1 Proxies (0 in flight, 1 waiting, target 10 per Proxy; 1 wanted)',
    });
    const load = { inFlight: 75, waiting: 0 };
    expect(decideReplicas(A, { replicas: 1 }, load, 0).replicas).toBe(2);
    expect(decideReplicas(A, { replicas: 2 }, load, 0).replicas).toBe(4);
    expect(decideReplicas(A, { replicas: 4 }, load, 0).replicas).toBe(8);
    // Never above maxReplicas, whatever comes.
    expect(decideReplicas(A, { replicas: 8 }, { inFlight: 500, waiting: 90 }, 0)).toMatchObject({
      replicas: 8,
      desired: 8,
    });
  });

  it('scales down one Proxy at a time, each after scaleDownAfter without the demand for it', () => {
    let mem: { replicas: number; belowSince?: number | undefined } = { replicas: 3 };
    const idle = { inFlight: 0, waiting: 0 };
    const seen: number[] = [];
    for (let t = 0; t <= 200_000; t += 1_000) {
      const d = decideReplicas(A, mem, idle, t);
      if (d.change !== undefined) seen.push(t);
      mem = { replicas: d.replicas, belowSince: d.belowSince };
    }
    expect(seen).toEqual([60_000, 120_000, 180_000]);
    expect(mem.replicas).toBe(0);
    // Demand back before the wait is over: the wait starts again.
    const waiting = decideReplicas(A, { replicas: 2 }, { inFlight: 5, waiting: 0 }, 0);
    expect(waiting).toMatchObject({ replicas: 2, desired: 1, belowSince: 0 });
    const back = decideReplicas(
      A,
      { replicas: 2, belowSince: 0 },
      { inFlight: 15, waiting: 0 },
      30_000,
    );
    expect(back).toEqual({ replicas: 2, desired: 2 });
  });

  it('changes nothing on unknown demand, but keeps minReplicas', () => {
    expect(decideReplicas(A, { replicas: 3 }, undefined, 0)).toEqual({ replicas: 3, desired: 3 });
    expect(decideReplicas({ ...A, minReplicas: 2 }, undefined, undefined, 0).replicas).toBe(2);
  });

  it('reads the demand from the gateway’s metrics text', () => {
    const text = [
      '# TYPE proxy_op_gateway_upstream_in_flight gauge',
      'proxy_op_gateway_upstream_in_flight{upstream="a"} 3',
      'proxy_op_gateway_upstream_in_flight{upstream="b"} 4',
      '# TYPE proxy_op_gateway_waiting gauge',
      'proxy_op_gateway_waiting 2',
      '',
    ].join('\n');
    expect(parseDemand(text)).toEqual({ inFlight: 7, waiting: 2 });
    expect(parseDemand('proxy_op_gateway_upstream_in_flight{upstream="a"} 3\n')).toBeUndefined();
    expect(parseDemand('proxy_op_gateway_waiting NaN\n')).toBeUndefined();
  });
});

describe('the Proxy a scale-down takes', () => {
  const hourly = { period: 'hour', minimumSeconds: 3600 } as const;
  const start = Date.parse('2026-12-08T10:00:00Z');

  it('is the one whose paid hour ends first, by a scripted clock', () => {
    const now = start + 3 * 3_600_000 + 50 * 60_000; // 13:50
    const at = (min: number) => new Date(start + min * 60_000).toISOString();
    // Started 10:00 (paid to 14:00), 12:55 (paid to 13:55), 13:40 (paid to 14:40).
    expect(paidPeriodEnd(hourly, at(0), now)).toBe(start + 4 * 3_600_000);
    expect(paidPeriodEnd(hourly, at(175), now)).toBe(start + 235 * 60_000);
    expect(paidPeriodEnd('none', at(0), now)).toBe(now);
    expect(paidPeriodEnd(hourly, undefined, now)).toBe(now);
    const v = validatePoolSpec({ template, gateway, autoscale: { maxReplicas: 4 }, replicas: 2 });
    if (!v.ok) throw new Error(JSON.stringify(v.problems));
    const spec = resolvePoolSpec(v.value);
    expect(spec.paidFirst).toBe(true);
    const m = (name: string, minutes: number): Member => ({
      name,
      uid: name,
      created: start + minutes * 60_000,
      hash: 'h',
      provider: 'a',
      ready: true,
      readyChanged: 0,
      wasReady: true,
      deleting: false,
      skipRemediation: false,
      remediate: false,
      paidUntil: paidPeriodEnd(hourly, at(minutes), now),
    });
    const plan = planPool({
      spec,
      hash: 'h',
      members: [m('ten', 0), m('twelve-55', 175), m('thirteen-40', 220)],
      now,
      failingProviders: new Map(),
    });
    expect([...plan.delete, ...plan.drain]).toEqual(['twelve-55']);
  });
});
