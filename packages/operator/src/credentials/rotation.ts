/**
 * What both ways of rotating a credential share (in place, `step.ts`;
 * make-before-break, `successor.ts`): whose credential it is, when a
 * rotation is due, when its next step is, and how the status shows it.
 *
 * @module
 */

import { ROTATE_ANNOTATION } from '../api/auth.js';
import { durationMs } from '../api/duration.js';
import type { ProxyObject } from '../api/proxy.js';
import { DEFAULTS } from '../defaults.js';
import type { StatusDraft } from '../proxy/status-draft.js';
import type { CredentialOwner, CredentialStore } from '../store/credentials.js';
import type { CredentialRecord } from './credential.js';

/** What the credential steps work with. */
export interface AuthStepContext {
  readonly obj: ProxyObject;
  readonly status: StatusDraft;
  readonly store: CredentialStore;
  readonly now: Date;
  readonly signal?: AbortSignal | undefined;
}

/** The owner of a Proxy's credential. */
export function ownerOf(obj: ProxyObject): CredentialOwner {
  const { namespace, name, uid } = obj.metadata;
  return { namespace, name, uid };
}

/** The rotation's overlap of the Proxy, in ms. */
export function overlapOf(obj: ProxyObject): number {
  return durationMs(obj.spec.auth?.overlap ?? '') ?? DEFAULTS.credentialOverlapMs;
}

/**
 * The status of a Proxy's credential: when it was issued, the overlap
 * during a rotation, and the `Credentials` condition (reason `Generated`,
 * `FromSecret` or `Rotating`).
 */
export function showCredentials(c: AuthStepContext, rec: CredentialRecord): void {
  c.status.st.credentials ??= {};
  const creds = c.status.st.credentials;
  creds.rotatedTime = rec.rotatedTime;
  if (rec.overlapUntil === undefined) delete creds.overlapUntil;
  else creds.overlapUntil = rec.overlapUntil;
  const where = `${c.store.kind === 'secret' || rec.source === 'secretRef' ? 'Secret' : 'file'} ${creds.secretName}`;
  const rotating = rec.next !== undefined || rec.previous !== undefined;
  const [reason, message] = rotating
    ? [
        'Rotating',
        `a new credential is being rolled out; the previous one is accepted until the overlap ends (${where})`,
      ]
    : rec.source === 'generated'
      ? ['Generated', `a generated credential (${where})`]
      : ['FromSecret', `the credential of ${where}`];
  c.status.cond('Credentials', 'True', reason, message);
}

/** Whether a generated credential is due for rotation: its age, or a new rotate annotation. */
export function rotationDue(c: AuthStepContext, rec: CredentialRecord): boolean {
  if (rec.source !== 'generated') return false;
  const asked = c.obj.metadata.annotations?.[ROTATE_ANNOTATION];
  if (asked !== undefined && asked !== c.status.st.credentials?.rotateRequest) return true;
  const every = durationMs(c.obj.spec.auth?.rotateEvery ?? '');
  return every !== undefined && every > 0 && Date.parse(rec.rotatedTime) + every <= c.now.getTime();
}

/** Notes the rotate annotation's value a rotation now acts on. */
export function noteRotateRequest(c: AuthStepContext): void {
  const asked = c.obj.metadata.annotations?.[ROTATE_ANNOTATION];
  if (asked === undefined) return;
  c.status.st.credentials ??= {};
  c.status.st.credentials.rotateRequest = asked;
}

/** How long until the rotation's next step, in ms (undefined: none is due). */
export function nextStepIn(c: AuthStepContext, rec: CredentialRecord): number | undefined {
  const now = c.now.getTime();
  if (rec.next !== undefined) return DEFAULTS.credentialVerifyPollMs;
  if (rec.overlapUntil !== undefined) return Math.max(0, Date.parse(rec.overlapUntil) - now);
  const every = durationMs(c.obj.spec.auth?.rotateEvery ?? '');
  if (rec.source !== 'generated' || every === undefined || every === 0) return undefined;
  return Math.max(0, Date.parse(rec.rotatedTime) + every - now);
}
