/**
 * Steps on one domain that several operations share: looking it up,
 * reading its mark, starting it and waiting for it to run.
 *
 * @module
 */
import type { Mark, OperationContext } from '@proxy-op/contract';
import { DomainState, ErrorCode } from '@proxy-op/libvirt-rpc';
import { hasCode } from './classify.js';
import { checkDomain, type Runtime, signalOf } from './runtime.js';
import type { Domain, LibvirtSeam } from './seam.js';
import { isStarting } from './state.js';

/** The domain named `name`, or undefined when there is none. */
export async function lookupDomain(
  seam: LibvirtSeam,
  name: string,
  signal: AbortSignal,
): Promise<Domain | undefined> {
  try {
    return checkDomain(await seam.domainLookupByName({ name }, signal));
  } catch (err) {
    if (hasCode(err, ErrorCode.ERR_NO_DOMAIN)) return undefined;
    throw err;
  }
}

/**
 * The domain's mark in the flavour's namespace: undefined when the domain
 * carries no such element or says it is not managed. An element the
 * namespace cannot read throws `MarkFormatError`; the domain vanishing
 * throws libvirt's `ERR_NO_DOMAIN`.
 */
export async function readMark(
  rt: Runtime,
  seam: LibvirtSeam,
  dom: Domain,
  signal: AbortSignal,
): Promise<Mark | undefined> {
  let xml: string;
  try {
    xml = await seam.domainGetMetadata({ dom, uri: rt.flavour.metadata.uri }, signal);
  } catch (err) {
    if (hasCode(err, ErrorCode.ERR_NO_DOMAIN_METADATA)) return undefined;
    throw err;
  }
  if (typeof xml !== 'string') throw new TypeError('metadata that is not a string');
  rt.log.trace({ domain: dom.name, metadata: xml }, `${rt.flavour.prefix} metadata read`);
  return rt.flavour.metadata.parse(xml);
}

/** The state and reason of a domain, checked. */
export async function domainState(
  seam: LibvirtSeam,
  dom: Domain,
  signal: AbortSignal,
): Promise<{ state: number; reason: number }> {
  const st = await seam.domainGetState({ dom }, signal);
  if (typeof st?.state !== 'number' || typeof st.reason !== 'number') {
    throw new TypeError('a domain state without state or reason');
  }
  return st;
}

const STATE_NAMES: Readonly<Record<number, string>> = {
  [DomainState.NOSTATE]: 'nostate',
  [DomainState.RUNNING]: 'running',
  [DomainState.BLOCKED]: 'blocked',
  [DomainState.PAUSED]: 'paused',
  [DomainState.SHUTDOWN]: 'shutdown',
  [DomainState.SHUTOFF]: 'shutoff',
  [DomainState.CRASHED]: 'crashed',
  [DomainState.PMSUSPENDED]: 'pmsuspended',
};

/** libvirt's name of a state number. */
export function stateName(state: number): string {
  return STATE_NAMES[state] ?? `state ${state}`;
}

/**
 * Starts the domain unless it runs. Paused and suspended domains are
 * Permanent: resuming someone's paused guest is the admin's call. With
 * `createReturn: blocking`, waits (every `poll` ms, up to the `running`
 * budget) until libvirt reports it running; Transient on expiry, and at
 * once when it stops again.
 */
export async function ensureRunning(
  rt: Runtime,
  ctx: OperationContext,
  seam: LibvirtSeam,
  dom: Domain,
  host: string,
): Promise<void> {
  const signal = signalOf(ctx);
  const { state, reason } = await domainState(seam, dom, signal);
  if (state === DomainState.RUNNING || state === DomainState.BLOCKED) return;
  if (isStarting(state, reason)) {
    // An earlier attempt's start, still under way on the daemon: wait for it, do not start again.
  } else if (state === DomainState.PAUSED || state === DomainState.PMSUSPENDED) {
    throw ctx.permanent(
      `domain ${dom.name} on host ${host} is ${stateName(state)}; resume it on the host (virsh resume) or delete it`,
    );
  } else {
    try {
      await seam.domainCreate({ dom }, signal);
    } catch (err) {
      // Started meanwhile (an earlier attempt the daemon still carried out): the wait below decides.
      if (!hasCode(err, ErrorCode.ERR_OPERATION_INVALID)) throw err;
    }
  }
  if (rt.flavour.profile.createReturn !== 'blocking') return;
  const deadline = Date.now() + rt.budgets.running;
  for (;;) {
    const st = await domainState(seam, dom, signal);
    if (st.state === DomainState.RUNNING || st.state === DomainState.BLOCKED) return;
    if (
      !isStarting(st.state, st.reason) &&
      st.state !== DomainState.NOSTATE &&
      st.state !== DomainState.SHUTOFF
    ) {
      throw ctx.transient(
        `domain ${dom.name} on host ${host} is ${stateName(st.state)} right after its start`,
      );
    }
    if (st.state === DomainState.SHUTOFF && st.reason !== 0) {
      throw ctx.transient(`domain ${dom.name} on host ${host} stopped right after its start`);
    }
    if (Date.now() >= deadline) {
      throw ctx.transient(
        `domain ${dom.name} on host ${host} did not report running within ${rt.budgets.running} ms of its start`,
      );
    }
    await ctx.sleep(rt.budgets.poll);
  }
}
