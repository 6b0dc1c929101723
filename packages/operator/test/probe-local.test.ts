// Peers: the local provider's real proxy processes on 127.0.75.0/24 and beyond (the forward
// proxy program), probed through their data plane against the operator's own whoami target on
// loopback; the operator runs in process over a memory store. Faults are real too: a proxy
// stopped with SIGSTOP, allowedSources that shut the operator out, the target closed.
import { afterEach, describe, expect, it } from 'vitest';
import { getCondition } from '../src/api/conditions.js';
import { createPrometheusMetrics } from '../src/process/telemetry.js';
import { type ProbeRig, probeRig, proxyPids } from './probe-support.js';

let rig: ProbeRig | undefined;

async function start(opts?: Parameters<typeof probeRig>[0]): Promise<ProbeRig> {
  rig = await probeRig(opts);
  return rig;
}

afterEach(async () => {
  await rig?.close();
  rig = undefined;
}, 60_000);

const status = (r: ProbeRig, name = 'web') => r.store.get(`default/${name}`)?.status;
const cond = (r: ProbeRig, type: 'Ready' | 'DataPlane' | 'RemediationAllowed', name = 'web') =>
  getCondition(status(r, name)?.conditions, type);
const events = (r: ProbeRig, reason: string, name = 'web') =>
  r.store.events.filter((e) => e.key === `default/${name}` && e.reason === reason);

describe('probing the local provider’s real proxies', () => {
  it('is Ready only after a probe passed, with the egress IP the target saw: the proxy’s own address', async () => {
    const r = await start();
    r.apply('web');
    await r.until(() => status(r)?.phase === 'Ready');
    const st = status(r);
    expect(cond(r, 'Ready')).toMatchObject({ status: 'True', reason: 'Running' });
    expect(cond(r, 'DataPlane')).toMatchObject({ status: 'True', reason: 'ProbePassed' });
    expect(st?.ip).toMatch(/^127\.0\.75\.\d+$/);
    expect(st?.egressIP).toBe(st?.ip);
    expect(st?.probe).toMatchObject({
      result: 'Passed',
      consecutiveFailures: 0,
      target: r.target.target.connect?.toString(),
    });
    expect(st?.probe?.latency?.totalMs).toBeGreaterThan(0);
    // The target answered both checks of each probe.
    expect(r.target.whoami.answered).toBeGreaterThanOrEqual(2);
    // Its history is kept in memory.
    await r.until(() => (r.operator.probes?.history('default/web').length ?? 0) >= 3);
    expect(r.operator.probes?.history('default/web').every((e) => e.ok)).toBe(true);
  }, 60_000);

  it('an operator that starts again keeps a Ready Proxy Ready, and writes nothing while its probes pass', async () => {
    const r = await start({ settings: { readyResyncMs: 3_600_000 } });
    r.apply('web');
    await r.until(() => status(r)?.phase === 'Ready');
    const before = status(r);
    let writes = 0;
    const update = r.store.updateStatus.bind(r.store);
    r.store.updateStatus = (key, st) => {
      writes++;
      return update(key, st);
    };
    await r.restart();
    const probes = () => r.operator.probes?.stats().probes ?? 0;
    // The new operator reconciles every Proxy at start, then probes: not a blip of Ready.
    let phases = new Set<string | undefined>();
    const deadline = Date.now() + 30_000;
    while (probes() < 5 && Date.now() < deadline) {
      phases.add(status(r)?.phase);
      await new Promise((res) => setTimeout(res, 5));
    }
    phases = new Set([...phases, status(r)?.phase]);
    expect([...phases]).toEqual(['Ready']);
    expect(writes).toBe(0);
    expect(status(r)).toEqual(before);
  }, 60_000);

  it('SIGSTOP: ProbeFailed after the threshold, with an Event; SIGCONT: Ready again, with an Event', async () => {
    const r = await start();
    r.apply('web');
    await r.until(() => status(r)?.phase === 'Ready');
    const [pid] = proxyPids(r.stateDir);
    expect(pid).toBeTypeOf('number');
    process.kill(pid as number, 'SIGSTOP');
    try {
      await r.until(() => status(r)?.phase === 'Unhealthy');
      expect(cond(r, 'Ready')).toMatchObject({ status: 'False', reason: 'ProbeFailed' });
      expect(cond(r, 'Ready')?.message).toMatch(/timed out after 500 ms/);
      expect(cond(r, 'DataPlane')).toMatchObject({ status: 'False', reason: 'ProbeFailed' });
      expect(status(r)?.probe?.consecutiveFailures).toBeGreaterThanOrEqual(2);
      expect(events(r, 'ProbeFailed')).toHaveLength(1);
      expect(events(r, 'ProbeFailed')[0]?.message).toMatch(/^2 probes in a row failed/);
    } finally {
      process.kill(pid as number, 'SIGCONT');
    }
    await r.until(() => status(r)?.phase === 'Ready');
    expect(cond(r, 'DataPlane')).toMatchObject({ status: 'True', reason: 'ProbePassed' });
    expect(events(r, 'ProbePassed')).toHaveLength(1);
    // One Event per transition, not per probe.
    expect(events(r, 'ProbeFailed')).toHaveLength(1);
    // Nothing was replaced: the Proxy has no remediation.
    expect(proxyPids(r.stateDir)).toEqual([pid]);
  }, 60_000);

  it('allowedSources that shut the operator out: ProbeFailed naming the refusal once the startup timeout ran out', async () => {
    const r = await start({ settings: { startupTimeoutMs: 800 } });
    r.apply('web', { allowedSources: ['127.0.0.9/32'] });
    await r.until(
      () => status(r)?.phase === 'Provisioning' && cond(r, 'Ready')?.reason === 'ProbeStarting',
    );
    await r.until(() => status(r)?.phase === 'Unhealthy');
    expect(cond(r, 'Ready')?.message).toBe(
      'the probe through the proxy fails at get.status: the proxy closed the connection without answering (a proxy closes at once a client whose source it does not allow)',
    );
    expect(events(r, 'ProbeFailed')[0]?.message).toMatch(
      /^no probe passed within the startup timeout \(800 ms\); the last failed at get\.status: the proxy closed the connection without answering/,
    );
    expect(status(r)?.probe?.lastFailure).toMatchObject({ check: 'get', step: 'status' });
    expect(status(r)?.egressIP).toBeUndefined();
  }, 60_000);

  it('with spec.remediation, replaces a proxy whose probes keep failing after unhealthyTimeout', async () => {
    const r = await start({ settings: { startupTimeoutMs: 30_000 } });
    r.apply('web', { remediation: { unhealthyTimeout: '300ms' } });
    await r.until(() => status(r)?.phase === 'Ready');
    const [pid] = proxyPids(r.stateDir);
    process.kill(pid as number, 'SIGSTOP');
    try {
      await r.until(() => events(r, 'Remediating').length > 0);
      expect(events(r, 'Remediating')[0]?.message).toMatch(/its probes failed for 300ms/);
      // The instance is created again (a new process), and probed to Ready.
      await r.until(() => {
        const pids = proxyPids(r.stateDir);
        return pids.length === 1 && pids[0] !== pid && status(r)?.phase === 'Ready';
      });
    } finally {
      // Deleting the instance killed it (SIGKILL after the stop timeout); in case it did not:
      try {
        process.kill(pid as number, 'SIGKILL');
      } catch {
        // gone, as it should be
      }
    }
    expect(cond(r, 'RemediationAllowed')).toMatchObject({
      status: 'True',
      reason: 'WithinMaxUnhealthy',
    });
  }, 60_000);

  it('a target down for every proxy: the short-circuit holds, nothing is replaced, the condition says why', async () => {
    const r = await start({ probe: '{ maxUnhealthy: 40% }' });
    const names = ['a', 'b', 'c'];
    for (const n of names) r.apply(n, { remediation: { unhealthyTimeout: '200ms' } });
    await r.until(() => names.every((n) => status(r, n)?.phase === 'Ready'));
    const pids = proxyPids(r.stateDir).sort();
    await r.target.close();
    await r.until(() => names.every((n) => status(r, n)?.phase === 'Unhealthy'));
    await r.until(() => names.every((n) => cond(r, 'RemediationAllowed', n)?.status === 'False'));
    const held = cond(r, 'RemediationAllowed', 'a');
    expect(held?.reason).toBe('TooManyUnhealthy');
    expect(held?.message).toMatch(/more than its probe\.maxUnhealthy \(40%, 1 of 3\) allows/);
    // Due, and held: one Event each, and the instances stay.
    await r.until(() => names.every((n) => events(r, 'RemediationRestricted', n).length === 1));
    await new Promise((res) => setTimeout(res, 800));
    expect(names.flatMap((n) => events(r, 'Remediating', n))).toEqual([]);
    expect(proxyPids(r.stateDir).sort()).toEqual(pids);
    expect(cond(r, 'Ready', 'b')?.message).toMatch(/get\.connect|get\.status|ECONNREFUSED|connect/);
  }, 60_000);

  it('counts every step in proxy_op_probe_duration_seconds and each failure in proxy_op_probe_failures_total', async () => {
    const metrics = createPrometheusMetrics();
    const r = await start({ meter: metrics.meter });
    r.apply('web');
    await r.until(() => status(r)?.phase === 'Ready');
    const [pid] = proxyPids(r.stateDir);
    process.kill(pid as number, 'SIGSTOP');
    try {
      await r.until(() => status(r)?.phase === 'Unhealthy');
    } finally {
      process.kill(pid as number, 'SIGCONT');
    }
    const text = await metrics.text();
    await metrics.shutdown();
    for (const [check, step] of [
      ['get', 'connect'],
      ['get', 'status'],
      ['get', 'nonce'],
      ['connect', 'connect'],
      ['connect', 'tunnel'],
      ['connect', 'status'],
      ['connect', 'nonce'],
      ['probe', 'total'],
    ]) {
      expect(text).toContain(
        `proxy_op_probe_duration_seconds_count{provider="here",check="${check}",step="${step}",`,
      );
    }
    expect(text).toMatch(
      /^proxy_op_probe_failures_total\{provider="here",check="get",step="(connect|status)",.*\} [1-9]/m,
    );
    expect(text).toMatch(/^proxy_op_remediation_allowed\{provider="here",.*\} 1$/m);
  }, 60_000);

  it('probe.socks5: each probe also goes through a SOCKS5 tunnel on the local proxy’s port', async () => {
    const metrics = createPrometheusMetrics();
    const r = await start({ probe: '{ socks5: true }', meter: metrics.meter });
    r.apply('web');
    await r.until(() => status(r)?.phase === 'Ready');
    const text = await metrics.text();
    await metrics.shutdown();
    for (const step of ['connect', 'tunnel', 'status', 'nonce']) {
      expect(text).toContain(
        `proxy_op_probe_duration_seconds_count{provider="here",check="socks5",step="${step}",`,
      );
    }
    expect(text).not.toMatch(/^proxy_op_probe_failures_total\{provider="here",check="socks5"/m);
    expect(cond(r, 'DataPlane')).toMatchObject({ status: 'True' });
  }, 60_000);

  it('probe.enabled false: Ready as the provider says, DataPlane Unknown', async () => {
    const r = await start({ probe: '{ enabled: false }' });
    r.apply('web');
    await r.until(() => status(r)?.phase === 'Ready');
    expect(cond(r, 'DataPlane')).toMatchObject({ status: 'Unknown', reason: 'ProbeDisabled' });
    expect(status(r)?.egressIP).toBeUndefined();
    expect(r.operator.probes?.stats().tracked).toBe(0);
  }, 60_000);
});
