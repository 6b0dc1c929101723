/**
 * The Checker: one target per configured node. The operation shell checks
 * the targets concurrently, answers in config order and says `Timeout` for
 * a node still being checked when the round ends.
 *
 * @module
 */
import {
  type CheckAnswer,
  type CheckContext,
  type CheckTarget,
  type ImplementationChecker,
  Reason,
  type SecretSet,
  tlsVerifyError,
} from '@proxy-op/contract';
import { isNoSuchStorage } from './classify.js';
import { ApiError, CaFileError, TokenFileError } from './errors.js';
import type { Runtime } from './runtime.js';
import type { StorageStatus } from './seam.js';
import { readToken } from './token.js';

/** The Checker's own reasons, besides the contract's shared ones. */
export const ProxmoxReason = Object.freeze({
  /** TLS verification failed, or caFile is missing or holds no certificate: fix url or caFile. */
  CertificateInvalid: 'CertificateInvalid',
  /** The token file is missing or malformed: fix the Secret. */
  CredentialsUnavailable: 'CredentialsUnavailable',
  /** isoStorage is missing, inactive or holds no iso content on the node. */
  StorageNotFound: 'StorageNotFound',
  /** A configured template VMID does not exist or is not a template. */
  TemplateNotFound: 'TemplateNotFound',
} as const);

/** The Checker over `rt`: the token file, then four requests per node. */
export function checker(rt: Runtime, secrets: SecretSet): ImplementationChecker {
  return {
    targets: (): CheckTarget[] =>
      rt.config.nodes.map((node) => ({
        target: node,
        address: rt.config.url,
        details: {
          isoStorage: rt.config.isoStorage,
          templates: `0/${Object.keys(rt.config.templates).length}`,
        },
      })),
    check: (target, ctx) => checkNode(rt, secrets, target.target, ctx),
    failed: (err) => {
      const reason = reasonFor(err);
      return reason === undefined ? undefined : answer(reason, (err as Error).message);
    },
  };
}

/**
 * Checks one node: the token file (without a request), the version, the
 * node's status, the seed storage and the templates. `details` fills in as
 * the check goes.
 */
async function checkNode(
  rt: Runtime,
  secrets: SecretSet,
  node: string,
  ctx: CheckContext,
): Promise<CheckAnswer> {
  const { api, config: c } = rt;
  const details = ctx.details;
  try {
    try {
      details.tokenID = (await readToken(c.tokenFile, secrets)).id;
    } catch (err) {
      return answer(ProxmoxReason.CredentialsUnavailable, (err as Error).message);
    }
    const version = await api.version(ctx.signal);
    details.pveVersion = version.version;
    const status = await api.nodeStatus({ node }, ctx.signal);
    if (status.kversion !== undefined) details.kernel = status.kversion;
    let storage: StorageStatus;
    try {
      storage = await api.storageStatus({ node, storage: c.isoStorage }, ctx.signal);
    } catch (err) {
      if (isNoSuchStorage(err) || (ApiError.isInstance(err) && err.status === 500)) {
        return answer(
          ProxmoxReason.StorageNotFound,
          `storage ${c.isoStorage} cannot be used on ${node}: ${(err as Error).message}`,
        );
      }
      throw err;
    }
    if (storage.avail !== undefined) {
      details.isoStorageAvailGiB = Math.round((storage.avail / 2 ** 30) * 10) / 10;
    }
    const content = (storage.content ?? '').split(',');
    if (storage.active === 0 || !content.includes('iso')) {
      return answer(
        ProxmoxReason.StorageNotFound,
        `storage ${c.isoStorage} on ${node} is ${storage.active === 0 ? 'inactive' : 'not enabled for iso content'}`,
      );
    }
    const resources = await api.clusterResources(ctx.signal);
    const missing: string[] = [];
    let found = 0;
    for (const [key, t] of Object.entries(c.templates)) {
      const e = resources.find((r) => r.vmid === t.vmid && r.type === 'qemu');
      if (e?.template === 1) found++;
      else missing.push(`${key} (${t.vmid})`);
    }
    details.templates = `${found}/${Object.keys(c.templates).length}`;
    if (missing.length > 0) {
      return answer(
        ProxmoxReason.TemplateNotFound,
        `templates missing or not templates: ${missing.join(', ')}`,
      );
    }
    return answer(Reason.Reachable, `node ${node} answers`);
  } finally {
    rt.log.debug({ node, ...details }, 'proxmox node checked');
  }
}

function answer(reason: string, message: string): CheckAnswer {
  return { reason, message };
}

/**
 * The Checker's reason for a failed request (contract §3, plus the
 * provider's own); undefined leaves the shell's `APIError`.
 */
function reasonFor(err: unknown): Reason | undefined {
  if (TokenFileError.isInstance(err)) return ProxmoxReason.CredentialsUnavailable;
  if (CaFileError.isInstance(err)) return ProxmoxReason.CertificateInvalid;
  if (tlsVerifyError(err) !== undefined) return ProxmoxReason.CertificateInvalid;
  if (ApiError.isInstance(err)) {
    if (err.status === 401) return Reason.Unauthorized;
    if (err.status === 403) return Reason.Forbidden;
    if (err.status === 595 || err.status === 596) return Reason.Unreachable;
    return undefined;
  }
  const name = (err as { name?: unknown } | null)?.name;
  if (
    name === 'TimeoutError' ||
    codeOf(err) === 'UND_ERR_HEADERS_TIMEOUT' ||
    codeOf(err) === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return Reason.Timeout;
  }
  const code = codeOf(err);
  if (
    code !== undefined &&
    /^(ECONN|EHOST|ENET|ENOTFOUND|EAI_|EPIPE|ETIMEDOUT|UND_ERR_CONNECT_TIMEOUT|UND_ERR_SOCKET|UND_ERR_CLOSED)/.test(
      code,
    )
  ) {
    return Reason.Unreachable;
  }
  return undefined;
}

function codeOf(err: unknown): string | undefined {
  const c = (err as { code?: unknown } | null)?.code;
  return typeof c === 'string' ? c : undefined;
}
