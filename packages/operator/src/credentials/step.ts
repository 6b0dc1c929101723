/**
 * The reconcile pass's credential steps. `resolveCredentials` (before the
 * spec is rendered) finds what the Proxy's proxy must require: nothing,
 * the operator's generated credential (made and kept on first sight), or
 * the one in the Secret `spec.auth.secretRef` names (refused with a
 * condition naming the Secret and key when it cannot be used).
 * `syncCredentials` (once the instance runs) brings the proxy's password
 * file up to date in place and carries a rotation forward one safe step at
 * a time: the next credential is issued and given to the proxy, handed to
 * clients only once a probe got through with it, and the previous one is
 * taken away after the overlap.
 *
 * @module
 */

import { createHash } from 'node:crypto';
import { credentialRotationOf, type ProxyAuth } from '@proxy-op/contract';
import type { ProxyObject } from '../api/proxy.js';
import type { ConfiguredProvider } from '../providers/set.js';
import { renderSpec } from '../proxy/cloudinit.js';
import {
  type Credential,
  type CredentialRecord,
  credentialUrl,
  fileHash,
  generateCredential,
  passwordFile,
  prepareLines,
  realmOf,
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
import { type ReplaceDeps, syncByReplacing } from './successor.js';

export { type AuthStepContext, ownerOf } from './rotation.js';

/** What the Proxy's proxy must require, as this pass resolved it. */
export type ResolvedAuth =
  | { readonly mode: 'none' }
  | {
      readonly mode: 'generated' | 'secretRef';
      readonly record: CredentialRecord;
      /** What Create passes (the accepted credentials' password file). */
      readonly auth: ProxyAuth;
      /** What the spec hash takes of it: the mode, never a credential. */
      readonly hashInput: string;
    };

/**
 * Whether the Proxy runs on terms from before credentials: no `spec.auth`,
 * an instance on record that was made without credentials, and a spec
 * whose hash without them is still the one the instance was made for. Such
 * a Proxy keeps no credentials until its spec changes.
 */
export function keepsNoCredentials(obj: ProxyObject, hashWithout: () => string): boolean {
  const st = obj.status;
  return (
    obj.spec.auth === undefined &&
    st.providerID !== undefined &&
    st.credentials === undefined &&
    st.specHash === hashWithout()
  );
}

/**
 * Resolves the Proxy's credentials (see the module comment); undefined when
 * the Proxy cannot go on (its status is then set, not written).
 */
export async function resolveCredentials(
  c: AuthStepContext,
  legacy: boolean,
): Promise<ResolvedAuth | undefined> {
  const { obj, status } = c;
  const spec = obj.spec.auth;
  const owner = ownerOf(obj);
  // A Proxy with its own cloud-init runs the proxy that cloud-init makes: no credential of ours
  // unless its spec asks for one.
  const own = spec === undefined && obj.spec.cloudInit !== undefined;
  if (legacy || own || spec?.type === 'none') {
    if (status.st.credentials !== undefined) {
      await c.store.remove(owner, c.signal);
      delete status.st.credentials;
    }
    return { mode: 'none' };
  }
  const realm = realmOf(owner.namespace, owner.name);
  const ref = spec?.secretRef?.name;
  let record: CredentialRecord;
  if (ref !== undefined) {
    const got = await c.store.readRef(owner.namespace, ref, c.signal);
    if (!got.ok) {
      status.cond('Credentials', 'False', 'SecretInvalid', got.problem);
      status.cond('Ready', 'False', 'SecretInvalid', got.problem);
      return undefined;
    }
    // A stable salt that depends on the Proxy and the username, never on the password.
    const salt = createHash('sha256')
      .update(`${owner.uid}\0${got.credential.username}`)
      .digest('base64')
      .replace(/[^./0-9A-Za-z]/g, '.')
      .slice(0, 16);
    record = {
      source: 'secretRef',
      current: { ...got.credential, salt },
      rotatedTime: status.st.credentials?.rotatedTime ?? c.now.toISOString(),
    };
    status.st.credentials = { ...status.st.credentials, secretName: ref };
  } else {
    const kept = await c.store.read(owner, c.signal);
    if (kept === undefined) {
      record = {
        source: 'generated',
        current: generateCredential(owner.name),
        rotatedTime: c.now.toISOString(),
      };
      await c.store.write(owner, record, undefined, c.signal);
    } else record = kept;
    status.st.credentials = { ...status.st.credentials, secretName: c.store.locate(owner) };
  }
  showCredentials(c, record);
  await prepareLines(record);
  return {
    mode: ref === undefined ? 'generated' : 'secretRef',
    record,
    auth: { realm, passwordFile: passwordFile(record) },
    hashInput: ref === undefined ? 'basic' : `secretRef:${ref}`,
  };
}

/**
 * The pass's credentials: {@link resolveCredentials} with the rule for a
 * Proxy from before credentials, and, for a provider that cannot change a
 * running proxy's credentials, the Secret's file in the hash (a changed
 * credential then replaces the instance).
 */
export async function credentialsForPass(
  c: AuthStepContext,
  cp: ConfiguredProvider,
): Promise<ResolvedAuth | undefined> {
  let legacy: boolean;
  try {
    legacy = keepsNoCredentials(c.obj, () => renderSpec(c.obj.spec).hash);
  } catch {
    legacy = false; // the spec does not render: the render step says why
  }
  const resolved = await resolveCredentials(c, legacy);
  if (resolved === undefined || resolved.mode === 'none') return resolved;
  if (credentialRotationOf(cp.module.profile) === 'in-place') return resolved;
  // An instance made now keeps its file for life: the current credential alone (a rotation
  // puts the next one on an instance of its own, `successor.ts`).
  const only = { ...resolved.record, next: undefined, previous: undefined };
  const auth = { ...resolved.auth, passwordFile: passwordFile(only) };
  if (resolved.mode !== 'secretRef') return { ...resolved, auth };
  return { ...resolved, auth, hashInput: `${resolved.hashInput}:${fileHash(auth.passwordFile)}` };
}

/** What {@link syncCredentials} needs besides the context. */
export interface SyncDeps {
  /** The provider that holds the instance. */
  readonly cp: ConfiguredProvider;
  /** The instance's ID and its endpoint `http://ip:port`. */
  readonly providerID: string;
  readonly endpoint: string;
  /** Runs a provider call with the pass's deadline and the shutdown signal. */
  call<T>(fn: (opts: { signal: AbortSignal }) => Promise<T>): Promise<T>;
  /** Whether a client gets through the instance with `credential` (a probe); true without probes. */
  verify(credential: Credential): Promise<boolean>;
  /** How a provider that cannot change a running proxy's credentials rotates them. */
  readonly replace: ReplaceDeps;
}

/**
 * Brings a running instance's credentials forward one step; resolves with
 * how long until the next step is due (undefined: nothing is).
 */
export async function syncCredentials(
  c: AuthStepContext,
  resolved: ResolvedAuth,
  d: SyncDeps,
): Promise<number | undefined> {
  if (resolved.mode === 'none') return undefined;
  if (credentialRotationOf(d.cp.module.profile) !== 'in-place') {
    return syncByReplacing(c, resolved, d);
  }
  const { status, obj } = c;
  const owner = ownerOf(obj);
  let rec = resolved.record;
  status.st.credentials ??= {};
  const creds = status.st.credentials;
  const applied = () => creds.appliedHash === fileHash(passwordFile(rec));
  const now = c.now.getTime();
  let changed = false;

  if (rec.next !== undefined && applied() && (await d.verify(rec.next))) {
    // The proxy takes the next credential: hand it out, keep the old one for the overlap.
    rec = {
      ...rec,
      previous: rec.current,
      current: rec.next,
      next: undefined,
      rotatedTime: c.now.toISOString(),
      overlapUntil: new Date(now + overlapOf(obj)).toISOString(),
    };
    changed = true;
  } else if (
    rec.previous !== undefined &&
    (rec.overlapUntil === undefined || Date.parse(rec.overlapUntil) <= now)
  ) {
    rec = { ...rec, previous: undefined, overlapUntil: undefined };
    changed = true;
  } else if (rec.next === undefined && rec.previous === undefined && rotationDue(c, rec)) {
    rec = { ...rec, next: generateCredential(owner.name) };
    noteRotateRequest(c);
    changed = true;
  }
  if (changed) await prepareLines(rec);
  const url = credentialUrl(rec.current, d.endpoint);
  if (changed || creds.urlEndpoint !== d.endpoint) {
    if (rec.source === 'generated') await c.store.write(owner, rec, url, c.signal);
    creds.urlEndpoint = d.endpoint;
  }
  const file = passwordFile(rec);
  const hash = fileHash(file);
  if (creds.appliedHash !== hash) {
    const auth: ProxyAuth = { realm: resolved.auth.realm, passwordFile: file };
    await d.call((o) => d.cp.provider.updateAuth?.(d.providerID, auth, o) ?? Promise.resolve());
    creds.appliedHash = hash;
  }
  showCredentials(c, rec);
  return nextStepIn(c, rec);
}
