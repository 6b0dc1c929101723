/**
 * Where the production seam gets its access token: the caller's
 * credentials, or a `GoogleAuth` for the key file or Application Default
 * Credentials. Every token read is declared secret, and a failed read
 * becomes a {@link CredentialsError} without the library's details.
 *
 * @module
 */
import { abortable, type SecretSet } from '@proxy-op/contract';
import { CredentialsError } from './errors.js';

/**
 * Where the provider gets its access token: a `GoogleAuth` or an
 * `AuthClient` from `google-auth-library` (both have `getAccessToken`).
 * The SDK clients authenticate with it; the provider also reads the token
 * before each call to keep it out of every error and log line.
 */
export interface GcpAuth {
  /** An access token for the Compute Engine API, as google-auth-library answers it. */
  getAccessToken(): Promise<unknown>;
}

/** The OAuth scope the clients ask for. */
export const COMPUTE_SCOPE = 'https://www.googleapis.com/auth/compute';

/**
 * The credentials to use: `given`, or a `GoogleAuth` with
 * {@link COMPUTE_SCOPE} for `credentialsFile` (unset: Application Default
 * Credentials). `google-auth-library` is loaded only then.
 */
export async function loadAuth(
  given: GcpAuth | undefined,
  credentialsFile: string | undefined,
): Promise<GcpAuth> {
  if (given !== undefined) return given;
  const { GoogleAuth } = await import('google-auth-library');
  return new GoogleAuth({
    scopes: [COMPUTE_SCOPE],
    ...(credentialsFile === undefined ? {} : { keyFilename: credentialsFile }),
  }) as GcpAuth;
}

/**
 * Reads the access token (the fetch cannot be cancelled: the signal only
 * stops the wait) and adds it to `secrets`. A failure while the signal has
 * not fired is a {@link CredentialsError}.
 */
export async function readToken(
  auth: GcpAuth,
  signal: AbortSignal | undefined,
  secrets: SecretSet,
): Promise<void> {
  let token: unknown;
  try {
    token = await abortable(auth.getAccessToken(), signal);
  } catch (err) {
    if (signal?.aborted) throw err;
    throw credentialsError(err);
  }
  const value =
    typeof token === 'string'
      ? token
      : typeof (token as { token?: unknown } | null)?.token === 'string'
        ? (token as { token: string }).token
        : undefined;
  if (value !== undefined && value !== '') secrets.add(value);
}

/** The credentials error of a failed token read, without the library's details. */
function credentialsError(err: unknown): CredentialsError {
  const message = err instanceof Error ? err.message : String(err);
  if (/could not load the default credentials|ENOENT|no such file/i.test(message)) {
    return new CredentialsError(
      'missing',
      'no Google credentials found: set credentialsFile, GOOGLE_APPLICATION_CREDENTIALS, or run where a metadata server gives them',
    );
  }
  return new CredentialsError('invalid', 'the Google credentials could not be used to get a token');
}
