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
} from '@proxy-op/contract';
import { ApiError, type StorageStatus } from './api.js';
import { isNoSuchStorage, reasonFor } from './classify.js';
import type { Runtime } from './runtime.js';
import { readToken } from './token.js';

/** The Checker's own reasons, besides the contract's shared ones. */
export const ProxmoxReason = {
  /** TLS verification failed, or caFile is missing or holds no certificate: fix url or caFile. */
  CertificateInvalid: 'CertificateInvalid',
  /** The token file is missing or malformed: fix the Secret. */
  CredentialsUnavailable: 'CredentialsUnavailable',
  /** isoStorage is missing, inactive or holds no iso content on the node. */
  StorageNotFound: 'StorageNotFound',
  /** A configured template VMID does not exist or is not a template. */
  TemplateNotFound: 'TemplateNotFound',
} as const;

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
      if (isNoSuchStorage(err) || (err instanceof ApiError && err.status === 500)) {
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
  } catch (err) {
    const reason = reasonFor(err, ctx.signal.aborted);
    return answer(reason, err instanceof Error ? err.message : 'check failed');
  } finally {
    rt.log.debug({ node, ...details }, 'proxmox node checked');
  }
}

function answer(reason: string, message: string): CheckAnswer {
  return { reason, message };
}
