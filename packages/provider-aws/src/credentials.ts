/**
 * Where the provider's AWS credentials come from: the caller's, a mounted
 * credentials file in the shared credentials format (read again on every
 * request, so a rotated Secret is used as soon as the file changes), or the
 * SDK's default chain (environment, shared files, web identity, container
 * and instance roles). A failed read becomes a {@link CredentialsError}
 * without the underlying details.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { CredentialsError } from './errors.js';

/** AWS credentials, as `@aws-sdk/client-ec2` takes them. */
export interface AwsIdentity {
  /** The access key ID (`AKIA…`, or `ASIA…` for temporary credentials). */
  readonly accessKeyId: string;
  /** The secret access key: declared secret, never logged. */
  readonly secretAccessKey: string;
  /** Set for temporary credentials. */
  readonly sessionToken?: string;
  /** When they expire; the SDK asks again before then. */
  readonly expiration?: Date;
}

/** Credentials the caller hands the provider: an identity, or a function resolving one (called when the SDK needs them). */
export type AwsCredentials = AwsIdentity | (() => Promise<AwsIdentity>);

/** The most a credentials file may hold. */
const MAX_FILE_BYTES = 64 * 1024;

/**
 * Reads one profile of a shared credentials file (`[name]` sections,
 * `aws_access_key_id`, `aws_secret_access_key`, `aws_session_token`).
 * A profile without both keys is a {@link CredentialsError} (`invalid`).
 */
export function parseCredentialsFile(text: string, profile: string): AwsIdentity {
  const values: Record<string, string> = {};
  let section: string | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const head = /^\[\s*(?:profile\s+)?([^\]]+?)\s*\]$/.exec(line);
    if (head !== null) {
      section = head[1];
      continue;
    }
    if (section !== profile) continue;
    const eq = line.indexOf('=');
    if (eq > 0) values[line.slice(0, eq).trim().toLowerCase()] = line.slice(eq + 1).trim();
  }
  const accessKeyId = values.aws_access_key_id ?? '';
  const secretAccessKey = values.aws_secret_access_key ?? '';
  if (accessKeyId === '' || secretAccessKey === '') {
    throw new CredentialsError(
      'invalid',
      `the credentials file has no profile "${profile}" with aws_access_key_id and aws_secret_access_key`,
    );
  }
  const sessionToken = values.aws_session_token;
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

/**
 * Credentials read from `path` every time the SDK asks, which it does for
 * every request: each identity is given an expiration of now, which the
 * SDK takes as "ask again".
 */
export function fileCredentials(path: string, profile: string): () => Promise<AwsIdentity> {
  return async () => {
    let text: string;
    try {
      const buf = await readFile(path);
      if (buf.byteLength > MAX_FILE_BYTES) {
        throw new CredentialsError(
          'invalid',
          `the credentials file is larger than ${MAX_FILE_BYTES} bytes`,
        );
      }
      text = buf.toString('utf8');
    } catch (err) {
      if (CredentialsError.isInstance(err)) throw err;
      const code = (err as { code?: unknown }).code;
      throw new CredentialsError(
        code === 'ENOENT' ? 'missing' : 'invalid',
        code === 'ENOENT'
          ? `the credentials file ${path} does not exist (yet): mount the Secret`
          : `the credentials file ${path} cannot be read (${String(code ?? 'error')})`,
      );
    }
    return { ...parseCredentialsFile(text, profile), expiration: new Date() };
  };
}

/** The credentials error of a failed resolution by the SDK's default chain, without its details. */
export function chainError(err: unknown): CredentialsError {
  if (CredentialsError.isInstance(err)) return err;
  const name = err instanceof Error ? err.name : '';
  if (name === 'CredentialsProviderError') {
    return new CredentialsError(
      'missing',
      'no AWS credentials found: set credentialsFile, the AWS_* environment, or run with a role (web identity, container or instance)',
    );
  }
  return new CredentialsError('invalid', 'the AWS credentials could not be resolved');
}
