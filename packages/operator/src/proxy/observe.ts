/**
 * The reconcile pass's last step: Get the instance and set the status from
 * it. A vanished instance is forgotten (to be created again; quietly when
 * it is the end of a replacement's deletion); a Stopped or
 * Terminated one replaced, and so is a Preempted one (the backend took it
 * back: a Normal event, and no probe failure of it counts against the
 * provider's short-circuit, since its probe record goes with it); a Running one is Ready once its data plane says
 * so (the probe scheduler's view, when probing is on), and replaced when
 * its probes have failed for its `spec.remediation.unhealthyTimeout` and
 * its provider's short-circuit allows it; a Provisioning one is polled.
 *
 * @module
 */
import { billingOf, isNotFound, type Location, locationProblems } from '@proxy-op/contract';
import { getCondition } from '../api/conditions.js';
import type { ProxyStatus } from '../api/proxy.js';
import type { ProbeSeed } from '../probe/record.js';
import type { DataPlaneView, RunningInstance } from '../probe/scheduler.js';
import { applyDataPlane } from '../probe/status.js';
import { hourlyPrice } from '../providers/price.js';
import type { ConfiguredProvider } from '../providers/set.js';
import type { ReconcileResult } from '../runtime/queue.js';
import type { StepContext } from './step.js';

const PROBING_OFF: DataPlaneView = {
  probing: false,
  reason: 'ProbeDisabled',
  message:
    'the operator probes no data plane (probe interval 0): Ready says the instance runs, not that a client gets through',
};

/** Gets the instance and sets the status from it (see the module comment). */
export async function observeInstance(
  c: StepContext,
  cp: ConfiguredProvider,
  providerID: string,
): Promise<ReconcileResult> {
  const st = c.status.st;
  let inst: Awaited<ReturnType<typeof cp.provider.get>>;
  try {
    inst = await c.env.call((o) => cp.provider.get(providerID, o));
  } catch (err) {
    if (!isNotFound(err)) throw err;
    if (st.phase === 'Replacing') {
      // The deletion a replacement asked for (returns early) is over: no surprise. The
      // replacement is done with it, so the next instance starts as any new one does.
      const reason = getCondition(st.conditions, 'Ready')?.reason;
      c.log.info({ providerID, reason }, 'instance deleted; creating another');
      clearInstance(c);
      st.phase = 'Provisioning';
      c.status.cond(
        'Ready',
        'False',
        'Provisioning',
        'the instance was replaced; creating another',
      );
      await c.status.write();
      return { requeueAfter: 0 };
    }
    c.log.warn({ providerID }, 'instance vanished; creating it again');
    c.event('Warning', 'InstanceVanished', `instance ${providerID} disappeared; creating it again`);
    clearInstance(c);
    st.phase = 'Provisioning';
    c.status.cond(
      'Ready',
      'False',
      'InstanceVanished',
      'the instance disappeared; creating it again',
    );
    await c.status.write();
    return { requeueAfter: 0 };
  }
  if (inst.state !== undefined) st.instanceState = inst.state;
  else delete st.instanceState;
  const location = wellFormed(inst.location);
  if (location !== undefined) st.location = location;
  else delete st.location;
  const cost = costOf(cp, c.obj.spec.placement?.machineType, inst.createdAt);
  if (cost !== undefined) st.cost = cost;
  else delete st.cost;
  if (inst.state === 'Preempted') {
    // The backend took it back: replaced, and not counted as the proxy's failure.
    return replaceInstance(c, cp, providerID, 'Preempted', {
      event: `instance ${providerID} was taken back by its backend (preempted); replacing it`,
      condition: 'the backend took the instance back (preempted); replacing it',
    });
  }
  if (inst.state === 'Stopped' || inst.state === 'Terminated') {
    return replaceInstance(c, cp, providerID, 'Replacing', {
      event: `instance ${providerID} is ${inst.state}; replacing it`,
      condition: `the instance is ${inst.state}; replacing it`,
    });
  }
  // A remediation under way goes on until the instance is gone.
  const ready = getCondition(st.conditions, 'Ready');
  if (st.phase === 'Replacing' && ready?.reason === 'Remediating') {
    return replaceInstance(c, cp, providerID, 'Remediating', {
      event: '',
      condition: ready.message ?? '',
    });
  }
  delete st.lastError;
  if (c.env.quota.failures(c.key) > 0) {
    c.env.quota.forget(c.key);
    c.status.cond('QuotaExceeded', 'False', 'QuotaAvailable', 'the provider accepted the instance');
  }
  if (inst.state === 'Running' && inst.ip !== undefined) {
    const ip = inst.ip;
    const port = c.obj.spec.port;
    const endpoint = `http://${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
    st.ip = ip;
    st.endpoint = endpoint;
    const instance = { providerID, ip, port, endpoint, credentials: c.credentials };
    return (await running(c, cp, instance, undefined)) ?? {};
  }
  // An instance that ran and now says Provisioning (a proxy that stopped answering its
  // provider) is judged by its probes while they fail.
  const probed =
    inst.state === 'Provisioning' ? c.env.probes?.tracked(c.key, providerID) : undefined;
  if (probed !== undefined) {
    const r = await running(c, cp, probed, 'the provider reports the instance Provisioning');
    if (r !== undefined) return r;
  } else c.env.probes?.forget(c.key);
  st.phase = 'Provisioning';
  delete st.ip;
  delete st.endpoint;
  c.status.cond('Ready', 'False', 'Provisioning', 'the instance is starting');
  await c.status.write();
  return { requeueAfter: c.env.provisioningPollMs };
}

/**
 * A Running instance's status from its data plane. With `provisioning`
 * (the provider no longer says Running), only a failing data plane is
 * shown (undefined otherwise: the caller shows Provisioning).
 */
async function running(
  c: StepContext,
  cp: ConfiguredProvider,
  instance: RunningInstance,
  provisioning: string | undefined,
): Promise<ReconcileResult | undefined> {
  const probes = c.env.probes;
  const view =
    probes === undefined
      ? PROBING_OFF
      : probes.observe(c.key, cp, instance, c.obj.spec.remediation, seedOf(c.obj.status));
  if (provisioning !== undefined && !(view.probing && view.verdict === 'failing')) return undefined;
  const action = applyDataPlane(c.status, view, instance.endpoint, provisioning);
  if (action === 'remediate' && view.probing) {
    const why = `its probes failed for ${c.obj.spec.remediation?.unhealthyTimeout}: ${view.message}`;
    return replaceInstance(c, cp, instance.providerID, 'Remediating', {
      event: `instance ${instance.providerID} is replaced: ${why}`,
      condition: `the instance is replaced: ${why}`,
    });
  }
  if (action === 'restricted' && view.probing && view.remediation !== undefined) {
    probes?.restricted(
      c.key,
      `instance ${instance.providerID} is due for replacement, but it is held: ${view.remediation.circuit.message}`,
    );
  }
  const wake = provisioning === undefined ? await c.syncCredentials?.(cp, instance) : undefined;
  await c.status.write();
  const poll = provisioning === undefined ? c.env.readyResyncMs : c.env.provisioningPollMs;
  return { requeueAfter: wake === undefined ? poll : Math.min(poll, wake) };
}

/**
 * What the status read says of the instance's data plane, when a probe of
 * it is on record (`status.probe`, which goes with the instance): where a
 * new record of its probes starts from.
 */
function seedOf(st: ProxyStatus): ProbeSeed | undefined {
  if (st.probe === undefined) return undefined;
  const dp = getCondition(st.conditions, 'DataPlane');
  const verdict =
    dp?.reason === 'ProbePassed' ? 'passing' : dp?.reason === 'ProbeFailed' ? 'failing' : undefined;
  if (verdict === undefined || dp === undefined) return undefined;
  return {
    verdict,
    since: Date.parse(dp.lastTransitionTime),
    egressIP: st.egressIP,
    published: st.probe,
  };
}

/**
 * The instance's cost as the status holds it: its provider's price for its
 * machine type, and when its billing began (its creation). Undefined when
 * the providers file gives the provider no price, or it bills nothing.
 */
function costOf(
  cp: ConfiguredProvider,
  machineType: string | undefined,
  createdAt: Date,
): ProxyStatus['cost'] {
  if (cp.price === undefined || billingOf(cp.module.profile) === 'none') return undefined;
  const perHour = hourlyPrice(cp.price, machineType);
  if (perHour === undefined || Number.isNaN(createdAt.getTime())) return undefined;
  return { currency: cp.price.currency, perHour, since: createdAt.toISOString() };
}

/**
 * The instance's location as the status holds it: only when the provider
 * reported one and it is well formed (a status the API server would refuse
 * is never written); undefined otherwise.
 */
function wellFormed(location: Location | undefined): ProxyStatus['location'] {
  if (location === undefined || locationProblems(location).length > 0) return undefined;
  const { region, zone, country } = location;
  const out = {
    ...(region === undefined ? {} : { region }),
    ...(zone === undefined ? {} : { zone }),
    ...(country === undefined ? {} : { country }),
  };
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Forgets the instance in the status and stops probing it. */
export function clearInstance(c: StepContext): void {
  c.status.clearInstance();
  c.env.probes?.forget(c.key);
}

/**
 * Replaces an instance that cannot serve (Stopped, Terminated or
 * Preempted, or remediated): deletes it, then forgets it so the next pass creates
 * another.
 */
async function replaceInstance(
  c: StepContext,
  cp: ConfiguredProvider,
  providerID: string,
  reason: 'Replacing' | 'Remediating' | 'Preempted',
  say: { readonly event: string; readonly condition: string },
): Promise<ReconcileResult> {
  const st = c.status.st;
  const first = st.phase !== 'Replacing';
  if (first) c.event(reason === 'Remediating' ? 'Warning' : 'Normal', reason, say.event);
  st.phase = 'Replacing';
  c.status.cond('Ready', 'False', reason, say.condition);
  c.env.probes?.forget(c.key);
  // The status says what the instance was and why it goes before it goes: a delete that is over
  // at once would otherwise leave no trace of the state that caused it (Preempted, Stopped).
  if (first) await c.status.write();
  if (!(await c.deleteInstance(cp, providerID))) {
    await c.status.write();
    return { requeueAfter: c.env.deletionPollMs };
  }
  c.log.info({ providerID, reason }, 'instance deleted; creating another');
  clearInstance(c);
  await c.status.write();
  return { requeueAfter: 0 };
}
