/**
 * Rotation make-before-break, for a provider that cannot change a running
 * proxy's credentials (profile `credentialRotation: replace`). A running
 * instance keeps the password file it was made with, so a rotation is a
 * second instance:
 *
 * 1. the next credential is issued and kept (the record's `next`);
 * 2. a successor is made under the Proxy's other instance name
 *    (`instanceName(…, slot)`), its proxy requiring the next credential
 *    alone; the name is on record before the Create, so a pass cut short
 *    finds the same instance again;
 * 3. once it runs and a probe got through it with the next credential, it
 *    becomes the Proxy's instance: the status, the Secret's URL and the
 *    credential switch to it together, and the old instance, still serving
 *    the previous credential, is kept as `retiring`;
 * 4. after the overlap the retiring instance is deleted and the previous
 *    credential is dropped.
 *
 * @module
 */
import { isNotFound, type ProxyAuth } from '@proxy-op/contract';
import type { ProbeCredentials } from '@proxy-op/probe';
import { instanceName } from '../api/naming.js';
import type { RunningInstance } from '../probe/types.js';
import type { ConfiguredProvider } from '../providers/set.js';
import type { MutableStatus } from '../proxy/status-draft.js';
import type { EventType } from '../store/proxies.js';
import {
  type Credential,
  type CredentialRecord,
  credentialUrl,
  fileHash,
  generateCredential,
  passwordFile,
} from './credential.js';
import {
  type AuthStepContext,
  nextStepIn,
  noteRotateRequest,
  overlapOf,
  ownerOf,
  rotationDue,
  showCredentials,
} from './rotation.js';

/** What a make-before-break rotation needs of the pass. */
export interface ReplaceDeps {
  /** Creates an instance of the Proxy named `name`, its proxy requiring `auth`; resolves with its ID. */
  create(name: string, auth: ProxyAuth): Promise<string>;
  /** The configured provider named `name` (where a retiring instance is), if any. */
  providerNamed(name: string): ConfiguredProvider | undefined;
  /** Deletes an instance of the Proxy; true once it is gone. */
  deleteInstance(cp: ConfiguredProvider, id: string): Promise<boolean>;
  /** Whether a client gets through `instance` with `credential` (a probe); true without probes. */
  verifyAt(
    cp: ConfiguredProvider,
    instance: RunningInstance,
    credential: Credential,
  ): Promise<boolean>;
  /** The Proxy's instance changed: what was probed of the old one is forgotten. */
  forgetProbes(): void;
  event(type: EventType, reason: string, message: string): void;
  /** How soon to look again at a successor still starting, and at an instance still being deleted, in ms. */
  readonly provisioningPollMs: number;
  readonly deletionPollMs: number;
}

/** What {@link syncByReplacing} works on: the Running instance and how to reach its provider. */
interface Holder {
  readonly cp: ConfiguredProvider;
  readonly providerID: string;
  readonly endpoint: string;
  call<T>(fn: (opts: { signal: AbortSignal }) => Promise<T>): Promise<T>;
  readonly replace: ReplaceDeps;
}

/** The credential of a record as the probes send it. */
const probeCredential = (c: Credential): ProbeCredentials => ({
  username: c.username,
  password: c.password,
});

/** The password file of one credential alone. */
function fileOf(rec: CredentialRecord, c: Credential): Uint8Array {
  return passwordFile({ ...rec, current: c, next: undefined, previous: undefined });
}

/**
 * Carries a make-before-break rotation one step forward (see the module
 * comment); resolves with how long until the next step is due.
 */
export async function syncByReplacing(
  c: AuthStepContext,
  resolved: { readonly record: CredentialRecord; readonly auth: ProxyAuth },
  d: Holder,
): Promise<number | undefined> {
  const { status, obj } = c;
  const owner = ownerOf(obj);
  const st = status.st;
  st.credentials ??= {};
  const creds = st.credentials;
  const r = d.replace;
  let rec = resolved.record;
  let changed = false;
  let wake: number | undefined;
  const overlapEnded =
    rec.overlapUntil === undefined || Date.parse(rec.overlapUntil) <= c.now.getTime();

  if ((rec.previous !== undefined || creds.retiring !== undefined) && overlapEnded) {
    // The overlap is over: the instance that served the previous credential goes, then the credential.
    const old = creds.retiring;
    if (old !== undefined) {
      const cp = r.providerNamed(old.provider);
      if (cp !== undefined && (await r.deleteInstance(cp, old.providerID))) {
        r.event(
          'Normal',
          'Retired',
          `deleted instance ${old.providerID}, which served the previous credential`,
        );
        delete creds.retiring;
      } else wake = r.deletionPollMs;
    }
    if (creds.retiring === undefined && rec.previous !== undefined) {
      rec = { ...rec, previous: undefined, overlapUntil: undefined };
      changed = true;
    }
  } else if (
    rec.next === undefined &&
    rec.previous === undefined &&
    creds.retiring === undefined &&
    rotationDue(c, rec)
  ) {
    rec = { ...rec, next: generateCredential(owner.name) };
    noteRotateRequest(c);
    changed = true;
  }
  if (changed || creds.urlEndpoint !== d.endpoint) {
    if (rec.source === 'generated') {
      await c.store.write(owner, rec, credentialUrl(rec.current, d.endpoint), c.signal);
    }
    creds.urlEndpoint = d.endpoint;
  }
  if (rec.next !== undefined) {
    const next = rec.next;
    const promoted = await advanceSuccessor(c, d, { rec, next, realm: resolved.auth.realm });
    if (promoted === undefined) wake = Math.min(wake ?? Infinity, r.provisioningPollMs);
    else rec = promoted;
  }
  showCredentials(c, rec);
  const due = nextStepIn(c, rec);
  return wake === undefined ? due : Math.min(wake, due ?? wake);
}

/**
 * Makes, watches and, once a client gets through it with the next
 * credential, promotes the successor; resolves with the record after the
 * promotion, or undefined while the successor is not there yet.
 */
async function advanceSuccessor(
  c: AuthStepContext,
  d: Holder,
  w: { rec: CredentialRecord; next: Credential; realm: string },
): Promise<CredentialRecord | undefined> {
  const { obj, status } = c;
  const st = status.st;
  st.credentials ??= {};
  const creds = st.credentials;
  const r = d.replace;
  if (creds.successor === undefined) {
    creds.successor = { slot: creds.slot === 1 ? 0 : 1 };
    await status.save(); // the name is on record before the instance exists
  }
  const succ = creds.successor;
  if (succ.providerID === undefined) {
    const name = instanceName(obj.metadata.namespace, obj.metadata.name, succ.slot === 1 ? 1 : 0);
    const id = await r.create(name, { realm: w.realm, passwordFile: fileOf(w.rec, w.next) });
    creds.successor = { ...succ, providerID: id };
    await status.save();
    r.event('Normal', 'RotationStarted', `creating instance ${id} with the next credential`);
    return undefined;
  }
  const id = succ.providerID;
  let inst: Awaited<ReturnType<typeof d.cp.provider.get>>;
  try {
    inst = await d.call((o) => d.cp.provider.get(id, o));
  } catch (err) {
    if (!isNotFound(err)) throw err;
    creds.successor = { slot: succ.slot }; // gone: made again on the next pass
    return undefined;
  }
  if (inst.state === 'Stopped' || inst.state === 'Terminated' || inst.state === 'Preempted') {
    if (await r.deleteInstance(d.cp, id)) creds.successor = { slot: succ.slot };
    return undefined;
  }
  if (inst.state !== 'Running' || inst.ip === undefined) return undefined;
  const ip = inst.ip;
  const port = obj.spec.port;
  const endpoint = `http://${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
  const running: RunningInstance = {
    providerID: id,
    ip,
    port,
    endpoint,
    credentials: probeCredential(w.next),
  };
  if (!(await r.verifyAt(d.cp, running, w.next))) return undefined;
  const rec: CredentialRecord = {
    ...w.rec,
    previous: w.rec.current,
    current: w.next,
    next: undefined,
    rotatedTime: c.now.toISOString(),
    overlapUntil: new Date(c.now.getTime() + overlapOf(obj)).toISOString(),
  };
  if (rec.source === 'generated') {
    await c.store.write(ownerOf(obj), rec, credentialUrl(rec.current, endpoint), c.signal);
  }
  promote(st, d, { id, ip, endpoint, slot: succ.slot === 1 ? 1 : 0, file: fileOf(rec, w.next) });
  r.forgetProbes();
  await status.save();
  r.event(
    'Normal',
    'Rotated',
    `instance ${id} took over with the new credential; ${d.providerID} serves the previous one until ${rec.overlapUntil}`,
  );
  return rec;
}

/** The successor becomes the Proxy's instance; the old one is kept as retiring. */
function promote(
  st: MutableStatus,
  d: Holder,
  to: { id: string; ip: string; endpoint: string; slot: 0 | 1; file: Uint8Array },
): void {
  st.credentials ??= {};
  const creds = st.credentials;
  creds.retiring = { providerID: d.providerID, provider: d.cp.name };
  creds.slot = to.slot;
  creds.urlEndpoint = to.endpoint;
  creds.appliedHash = fileHash(to.file);
  delete creds.successor;
  st.providerID = to.id;
  st.instanceProvider = d.cp.name;
  st.ip = to.ip;
  st.endpoint = to.endpoint;
  st.instanceState = 'Running';
  // `probe` and `egressIP` stay: the successor was just probed through, so the new record of its
  // probes starts passing (no Ready flap at the switch) and the next probe brings them up to date.
}

/**
 * The instances a make-before-break rotation holds besides the Proxy's
 * own: the successor being made and the one retiring, with their providers.
 */
export function sideInstances(
  st: MutableStatus,
  holder: string,
): { readonly provider: string; readonly providerID: string }[] {
  const out: { provider: string; providerID: string }[] = [];
  const s = st.credentials?.successor;
  if (s?.providerID !== undefined) out.push({ provider: holder, providerID: s.providerID });
  const r = st.credentials?.retiring;
  if (r !== undefined) out.push({ provider: r.provider, providerID: r.providerID });
  return out;
}

/** Forgets the side instances of a rotation (they are gone), and the rotation with them. */
export function clearSides(st: MutableStatus): void {
  if (st.credentials === undefined) return;
  delete st.credentials.successor;
  delete st.credentials.retiring;
}
