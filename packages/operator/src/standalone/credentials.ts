/**
 * The standalone operator's credentials: a file per Proxy beside the state
 * file, and the reader `proxy-op url` and `proxy-op probe` use.
 *
 * @module
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ensurePrivateFolder, readOwnedFile, writeFileAtomic } from '@proxy-op/contract/files';
import type { CredentialRecord } from '../credentials/credential.js';
import type {
  CredentialOwner,
  CredentialStore,
  RefCredential,
  StoredCredential,
} from '../store/credentials.js';

/**
 * A standalone credential file as kept (the record and the client URL);
 * undefined when there is none. `proxy-op url` and `proxy-op probe` read
 * the file `status.credentials.secretName` names through it.
 */
export async function readCredentialFile(path: string): Promise<StoredCredential | undefined> {
  let text: string;
  try {
    // Never through a link, never another user's file, never more than a record can be.
    text = (await readOwnedFile(path, { maxBytes: 64 * 1024 })).toString('utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return JSON.parse(text) as StoredCredential;
  } catch {
    throw new Error(`the credential file ${path} is not JSON; remove it to issue a new credential`);
  }
}

/**
 * Credentials in files: `<dir>/<namespace>.<name>.json`, mode 0600 in a
 * private folder (refused when another user owns it or others can write
 * it), replaced atomically through an exclusive temporary file, read
 * without following links.
 * Standalone mode has no Secrets, so `secretRef` is refused with what to do.
 */
export class FileCredentialStore implements CredentialStore {
  /** {@inheritDoc CredentialStore.kind} */
  readonly kind = 'file';
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** {@inheritDoc CredentialStore.locate} */
  locate(o: CredentialOwner): string {
    return join(this.#dir, `${o.namespace}.${o.name}.json`);
  }

  /** {@inheritDoc CredentialStore.read} */
  async read(o: CredentialOwner): Promise<CredentialRecord | undefined> {
    return (await readCredentialFile(this.locate(o)))?.record;
  }

  /** {@inheritDoc CredentialStore.write} */
  async write(o: CredentialOwner, record: CredentialRecord, url: string | undefined) {
    await ensurePrivateFolder(this.#dir);
    const body: StoredCredential = { record, ...(url === undefined ? {} : { url }) };
    await writeFileAtomic(this.locate(o), `${JSON.stringify(body, null, 2)}\n`);
  }

  /** {@inheritDoc CredentialStore.remove} */
  async remove(o: CredentialOwner): Promise<void> {
    await rm(this.locate(o), { force: true });
  }

  /** {@inheritDoc CredentialStore.readRef} */
  async readRef(_namespace: string, name: string): Promise<RefCredential> {
    return {
      ok: false,
      problem: `spec.auth.secretRef names Secret "${name}", but standalone mode has no Secrets; remove secretRef to have a credential generated`,
    };
  }
}
