/**
 * Where the operator keeps each Proxy's credential: a Secret on
 * Kubernetes (`kube/credentials.ts`), a file per Proxy beside the state in
 * standalone mode (`standalone/credentials.ts`), memory for embedding and
 * tests ({@link MemoryCredentialStore}). Every store keeps the record and
 * the client URL; none ever logs them.
 *
 * @module
 */
import type { Credential, CredentialRecord } from '../credentials/credential.js';

/** The Proxy a credential belongs to. */
export interface CredentialOwner {
  /** The Proxy's namespace. */
  readonly namespace: string;
  /** The Proxy's name. */
  readonly name: string;
  /** The Proxy's UID (a Secret's owner). */
  readonly uid: string;
}

/** A credential brought in a Secret, or why it cannot be used (naming the Secret and the key). */
export type RefCredential =
  | { readonly ok: true; readonly credential: Pick<Credential, 'username' | 'password'> }
  | { readonly ok: false; readonly problem: string };

/**
 * The checks on a credential a `secretRef` Secret holds, whichever store
 * read it: a username and a non-empty password, and a username that fits a
 * password-file line and a Basic header (no colon, space or control character).
 */
export function refCredential(where: string, username: string, password: string): RefCredential {
  if (username === '') return { ok: false, problem: `${where} has no username (key username)` };
  if (password === '') {
    return { ok: false, problem: `${where} has an empty password (key password)` };
  }
  if (username.includes(':') || /\s/.test(username) || hasControl(username)) {
    return {
      ok: false,
      problem: `${where}: the username (key username) may not hold a colon, a space or a control character`,
    };
  }
  return { ok: true, credential: { username, password } };
}

/** Whether `s` holds a control character (C0 or DEL). */
function hasControl(s: string): boolean {
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** Where credentials are kept. */
export interface CredentialStore {
  /** `secret` (Kubernetes) or `file` (standalone, memory). */
  readonly kind: 'secret' | 'file';
  /** Where the credential of `owner` is kept, for `status.credentials.secretName`. */
  locate(owner: CredentialOwner): string;
  /** The record of `owner`; undefined when none is kept. */
  read(owner: CredentialOwner, signal?: AbortSignal): Promise<CredentialRecord | undefined>;
  /** Keeps the record (and the client URL, once the endpoint is known). */
  write(
    owner: CredentialOwner,
    rec: CredentialRecord,
    url: string | undefined,
    signal?: AbortSignal,
  ): Promise<void>;
  /** Removes what is kept for `owner`; nothing when there is none. */
  remove(owner: CredentialOwner, signal?: AbortSignal): Promise<void>;
  /** Reads the credential of the Secret `name` in `namespace`, for `spec.auth.secretRef`. */
  readRef(namespace: string, name: string, signal?: AbortSignal): Promise<RefCredential>;
}

/** What a credential file holds. */
export interface StoredCredential {
  /** The credential record. */
  readonly record: CredentialRecord;
  /** The client URL, once the endpoint is known. */
  readonly url?: string | undefined;
}

/** Credentials in memory, for embedding and tests; `refs` are the Secrets `secretRef` can name. */
export class MemoryCredentialStore implements CredentialStore {
  /** {@inheritDoc CredentialStore.kind} */
  readonly kind = 'file';
  /** What is kept, by {@link MemoryCredentialStore.locate}. */
  readonly kept = new Map<string, StoredCredential>();
  /** The Secrets `secretRef` can name, by `namespace/name`. */
  readonly refs = new Map<string, Pick<Credential, 'username' | 'password'>>();

  /** {@inheritDoc CredentialStore.locate} */
  locate(o: CredentialOwner): string {
    return `memory:${o.namespace}/${o.name}`;
  }

  /** {@inheritDoc CredentialStore.read} */
  async read(o: CredentialOwner): Promise<CredentialRecord | undefined> {
    return this.kept.get(this.locate(o))?.record;
  }

  /** {@inheritDoc CredentialStore.write} */
  async write(o: CredentialOwner, record: CredentialRecord, url: string | undefined) {
    this.kept.set(this.locate(o), { record, url });
  }

  /** {@inheritDoc CredentialStore.remove} */
  async remove(o: CredentialOwner): Promise<void> {
    this.kept.delete(this.locate(o));
  }

  /** {@inheritDoc CredentialStore.readRef} */
  async readRef(namespace: string, name: string): Promise<RefCredential> {
    const where = `Secret ${namespace}/${name} (spec.auth.secretRef)`;
    const c = this.refs.get(`${namespace}/${name}`);
    if (c === undefined) return { ok: false, problem: `${where} does not exist` };
    return refCredential(where, c.username, c.password);
  }
}
