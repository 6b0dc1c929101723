/**
 * How the provider reaches the API server: in-cluster (the Pod's service
 * account) or a kubeconfig, with a bearer token read from its file on every
 * request, so a rotated token is used at once.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isIPv6 } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import type { SecretSet } from '@proxy-op/contract';
import type { KubernetesConfig } from './config.js';
import { CredentialsError } from './errors.js';

/** The service account files of a Pod. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The API server and the TLS material to reach it. */
export interface ClusterAccess {
  /** `https://host:port`, without a trailing slash. */
  readonly server: string;
  readonly ca?: Buffer | undefined;
  readonly cert?: Buffer | undefined;
  readonly key?: Buffer | undefined;
  /** False only when the kubeconfig says `insecure-skip-tls-verify`. */
  readonly rejectUnauthorized: boolean;
  readonly servername?: string | undefined;
  /** The `Authorization` header value for the next request, if any; reads token files anew. */
  authorization(signal?: AbortSignal): Promise<string | undefined>;
}

function missing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

/** Reads a token file; the token is declared to `secrets` before anything else sees it. */
export async function readTokenFile(
  path: string,
  secrets: SecretSet,
  signal?: AbortSignal,
): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, { encoding: 'utf8', signal });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new CredentialsError(
      missing(err)
        ? `the token file ${path} does not exist (yet)`
        : `the token file ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      missing(err),
      err,
    );
  }
  const token = text.trim();
  if (token === '' || /\s/.test(token)) {
    throw new CredentialsError(`the token file ${path} does not hold one token`, false);
  }
  secrets.add(token);
  return token;
}

function readSync(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new CredentialsError(
      `${what} ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      missing(err),
      err,
    );
  }
}

function inCluster(config: KubernetesConfig, secrets: SecretSet): ClusterAccess {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT;
  if (host === undefined || host === '' || port === undefined || port === '') {
    throw new CredentialsError(
      'not running in a cluster (KUBERNETES_SERVICE_HOST is not set) and no kubeconfig is configured',
      false,
    );
  }
  const tokenFile = config.tokenFile ?? `${SERVICE_ACCOUNT_DIR}/token`;
  return {
    server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
    ca: readSync(`${SERVICE_ACCOUNT_DIR}/ca.crt`, 'the service account CA'),
    rejectUnauthorized: true,
    authorization: async (signal) => `Bearer ${await readTokenFile(tokenFile, secrets, signal)}`,
  };
}

function fromKubeconfig(
  path: string,
  config: KubernetesConfig,
  secrets: SecretSet,
  Kc: new () => KubeConfig,
): ClusterAccess {
  readSync(path, 'the kubeconfig');
  const kc = new Kc();
  try {
    kc.loadFromFile(path);
  } catch (err) {
    throw new CredentialsError(
      `the kubeconfig ${path} cannot be used (${(err as Error).name})`,
      missing(err),
      err,
    );
  }
  if (config.context !== undefined) {
    if (kc.getContextObject(config.context) === null) {
      throw new CredentialsError(
        `the kubeconfig ${path} has no context "${config.context}"`,
        false,
      );
    }
    kc.setCurrentContext(config.context);
  }
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (cluster === null || user === null) {
    throw new CredentialsError(
      `the kubeconfig ${path} names no current context with a cluster and a user`,
      false,
    );
  }
  const server = cluster.server.replace(/\/+$/, '');
  if (!server.startsWith('https://')) {
    throw new CredentialsError(
      `the kubeconfig ${path} points at ${server}: only https API servers are used`,
      false,
    );
  }
  const material = (file: string | undefined, data: string | undefined, what: string) =>
    file !== undefined && file !== ''
      ? readSync(file, what)
      : data !== undefined && data !== ''
        ? Buffer.from(data, 'base64')
        : undefined;
  const ca = material(cluster.caFile, cluster.caData, 'the cluster CA');
  const cert = material(user.certFile, user.certData, 'the client certificate');
  const key = material(user.keyFile, user.keyData, 'the client key');
  if (user.token !== undefined && user.token !== '') secrets.add(user.token);
  const tokenFile = config.tokenFile;
  let authorization: ClusterAccess['authorization'];
  if (tokenFile !== undefined) {
    authorization = async (signal) => `Bearer ${await readTokenFile(tokenFile, secrets, signal)}`;
  } else if (user.exec !== undefined || user.authProvider !== undefined) {
    // Exec plugins and auth providers (cloud logins): client-node runs them and caches what
    // they answer; only the header is taken from it.
    authorization = async () => {
      const opts: { headers?: Record<string, string> } = {};
      await kc.applyToHTTPSOptions(opts);
      const header = opts.headers?.Authorization;
      if (header !== undefined) secrets.add(header.replace(/^Bearer\s+/i, ''));
      return header;
    };
  } else if (user.token !== undefined && user.token !== '') {
    const header = `Bearer ${user.token}`;
    authorization = async () => header;
  } else {
    authorization = async () => undefined;
  }
  return {
    server,
    ca,
    cert,
    key,
    rejectUnauthorized: cluster.skipTLSVerify !== true,
    servername: cluster.tlsServerName,
    authorization,
  };
}

/**
 * The cluster access the config describes. Reads files only (the
 * kubeconfig, the CA), never the network; throws {@link CredentialsError}
 * when they cannot be used.
 */
export function loadAccess(
  config: KubernetesConfig,
  secrets: SecretSet,
  k8s: { KubeConfig: new () => KubeConfig },
): ClusterAccess {
  return config.kubeconfig === undefined
    ? inCluster(config, secrets)
    : fromKubeconfig(config.kubeconfig, config, secrets, k8s.KubeConfig);
}
