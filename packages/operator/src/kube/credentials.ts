/**
 * The Proxies' credentials on Kubernetes: one Secret per Proxy, type
 * `kubernetes.io/basic-auth`, named `<proxy>-proxy-credentials`, owned by
 * the Proxy (so it goes with it), holding `username`, `password` and, once
 * the endpoint is known, `url`; during a rotation also the next or the
 * previous credential, and the rotation's times in annotations. A
 * `secretRef` Secret is read and checked, never written. No value of a
 * Secret ever reaches a log line or an error message.
 *
 * @module
 */

import { API_VERSION } from '../api/proxy.js';
import type { Credential, CredentialRecord } from '../credentials/credential.js';
import {
  type CredentialOwner,
  type CredentialStore,
  type RefCredential,
  refCredential,
} from '../store/credentials.js';
import { isStatus, type KubeClient } from './client.js';
import { getOrNothing, upsert } from './upsert.js';

const TYPE = 'kubernetes.io/basic-auth';
const A = {
  source: 'proxy-op.io/credential-source',
  rotated: 'proxy-op.io/rotated-time',
  overlap: 'proxy-op.io/overlap-until',
} as const;

interface RawSecret {
  metadata?: {
    name?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ uid?: string }>;
  };
  type?: string;
  data?: Record<string, string>;
}

/** A Secret's `data` value of a string. */
export const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
/** The string of a Secret's `data` value; undefined for none. */
export const unb64 = (s: string | undefined) =>
  s === undefined ? undefined : Buffer.from(s, 'base64').toString('utf8');

/** The name of the Secret of the Proxy `name`. */
export function credentialSecretName(name: string): string {
  return `${name.slice(0, 253 - '-proxy-credentials'.length)}-proxy-credentials`;
}

function credentialOf(data: Record<string, string>, prefix: string): Credential | undefined {
  const username = unb64(data[`${prefix}username`]);
  const password = unb64(data[`${prefix}password`]);
  const salt = unb64(data[`${prefix}salt`]);
  if (username === undefined || password === undefined || salt === undefined) return undefined;
  const rounds = Number(unb64(data[`${prefix}rounds`]));
  return {
    username,
    password,
    salt,
    ...(Number.isInteger(rounds) && rounds >= 1000 ? { rounds } : {}),
  };
}

function put(data: Record<string, string>, prefix: string, c: Credential | undefined): void {
  if (c === undefined) return;
  data[`${prefix}username`] = b64(c.username);
  data[`${prefix}password`] = b64(c.password);
  data[`${prefix}salt`] = b64(c.salt);
  if (c.rounds !== undefined) data[`${prefix}rounds`] = b64(String(c.rounds));
}

/** Credentials in Secrets, through the operator's API client. */
export class SecretCredentialStore implements CredentialStore {
  /** {@inheritDoc CredentialStore.kind} */
  readonly kind = 'secret';
  readonly #client: KubeClient;

  constructor(client: KubeClient) {
    this.#client = client;
  }

  /** {@inheritDoc CredentialStore.locate} */
  locate(o: CredentialOwner): string {
    return credentialSecretName(o.name);
  }

  #path(namespace: string, name?: string): string {
    const base = `/api/v1/namespaces/${namespace}/secrets`;
    return name === undefined ? base : `${base}/${name}`;
  }

  #get(namespace: string, name: string, what: string, signal?: AbortSignal) {
    return getOrNothing<RawSecret>(this.#client, what, this.#path(namespace, name), signal);
  }

  /** {@inheritDoc CredentialStore.read} */
  async read(o: CredentialOwner, signal?: AbortSignal): Promise<CredentialRecord | undefined> {
    const name = this.locate(o);
    const s = await this.#get(o.namespace, name, `reading Secret ${o.namespace}/${name}`, signal);
    if (s === undefined) return undefined;
    const owned = s.metadata?.ownerReferences?.some((r) => r.uid === o.uid) ?? false;
    if (!owned) {
      throw new Error(
        `Secret ${o.namespace}/${name} exists but is not owned by Proxy ${o.namespace}/${o.name}; delete or rename it, or name it in spec.auth.secretRef`,
      );
    }
    const data = s.data ?? {};
    const current = credentialOf(data, '');
    const ann = s.metadata?.annotations ?? {};
    const rotatedTime = ann[A.rotated];
    if (current === undefined || rotatedTime === undefined) return undefined;
    return {
      source: 'generated',
      current,
      next: credentialOf(data, 'next-'),
      previous: credentialOf(data, 'previous-'),
      overlapUntil: ann[A.overlap],
      rotatedTime,
    };
  }

  /** {@inheritDoc CredentialStore.write} */
  async write(
    o: CredentialOwner,
    rec: CredentialRecord,
    url: string | undefined,
    signal?: AbortSignal,
  ): Promise<void> {
    const name = this.locate(o);
    const data: Record<string, string> = {};
    put(data, '', rec.current);
    put(data, 'next-', rec.next);
    put(data, 'previous-', rec.previous);
    if (url !== undefined) data.url = b64(url);
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: TYPE,
      metadata: {
        name,
        namespace: o.namespace,
        labels: { 'app.kubernetes.io/managed-by': 'proxy-op' },
        annotations: {
          [A.source]: 'generated',
          [A.rotated]: rec.rotatedTime,
          ...(rec.overlapUntil === undefined ? {} : { [A.overlap]: rec.overlapUntil }),
        },
        ownerReferences: [
          { apiVersion: API_VERSION, kind: 'Proxy', name: o.name, uid: o.uid, controller: true },
        ],
      },
      data,
    };
    await upsert(this.#client, {
      operation: `writing Secret ${o.namespace}/${name}`,
      collection: this.#path(o.namespace),
      name,
      body,
      signal,
    });
  }

  /** {@inheritDoc CredentialStore.remove} */
  async remove(o: CredentialOwner, signal?: AbortSignal): Promise<void> {
    const name = this.locate(o);
    try {
      await this.#client.request({
        operation: `deleting Secret ${o.namespace}/${name}`,
        method: 'DELETE',
        path: this.#path(o.namespace, name),
        signal,
      });
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
  }

  /** {@inheritDoc CredentialStore.readRef} */
  async readRef(namespace: string, name: string, signal?: AbortSignal): Promise<RefCredential> {
    const where = `Secret ${namespace}/${name} (spec.auth.secretRef)`;
    const s = await this.#get(namespace, name, `reading ${where}`, signal);
    if (s === undefined) return { ok: false, problem: `${where} does not exist` };
    if (s.type !== TYPE) {
      return {
        ok: false,
        problem: `${where} is of type ${s.type ?? 'Opaque'}, not ${TYPE}; create it with type ${TYPE} and the keys username and password`,
      };
    }
    return refCredential(where, unb64(s.data?.username) ?? '', unb64(s.data?.password) ?? '');
  }
}
