/**
 * Create: the request's placement checked against this provider, then the
 * instance adopted by its state file (same UID and installation) or given
 * an address and a marked state file before anything is spawned; resolves
 * with `processes/<name>` once the proxy answers (`createReturn: blocking`).
 * A request with `auth` gets its password file written (`<name>.passwd`,
 * 0600) before the proxy starts, and the proxy requires it. The proxy's
 * destination policy is the request's `egress`, else the provider's.
 *
 * @module
 */
import {
  adoptionProblem,
  type CheckedCreateRequest,
  formatMark,
  type OperationContext,
  parseMark,
  requireOneOf,
} from '@proxy-op/contract';
import { pickAddress, underAllocation } from './address.js';
import { formatId } from './id.js';
import {
  accessLogPath,
  atAddress,
  type InstanceRecord,
  passwordPath,
  type RecordAuth,
} from './record.js';
import type { Runtime } from './runtime.js';
import { ensureRunning } from './start.js';

/** Adopts by UID or allocates an address; resolves with `processes/<name>` once the proxy answers. */
export async function createInstance(
  rt: Runtime,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): Promise<string> {
  checkPlacement(rt, req, ctx);
  const allowedSources = req.allowedSources ?? rt.config.allowedSources;
  rt.log.trace(
    {
      name: req.name,
      port: req.port,
      cloudInitBytes: req.cloudInit.byteLength,
      allowedSources,
      auth: req.auth !== undefined,
      egress: req.egress !== undefined,
    },
    'local create resolved',
  );
  const id = formatId({ name: req.name });
  const existing = await rt.seam.readState(req.name, ctx.signal);
  if (existing !== undefined) {
    const problem = adoptionProblem(parseMark(existing.marks), req);
    if (problem !== undefined) {
      throw ctx.permanent(
        `an instance named ${req.name} exists in ${rt.config.stateDir} and ${problem}; delete it or rename the Proxy`,
      );
    }
    await ensureRunning(rt, await adoptTerms(rt, existing, req, ctx), ctx);
    rt.log.debug({ name: req.name, adopted: true }, 'local instance ensured running');
    return id;
  }
  if (req.auth !== undefined) {
    await rt.seam.writePasswordFile(req.name, req.auth.passwordFile, ctx.signal);
  }
  const record = await allocate(rt, req, allowedSources, ctx.signal);
  await ensureRunning(rt, record, ctx);
  return id;
}

/** The record's authentication block for a request: the realm and `<name>.passwd`. */
function authOf(rt: Runtime, req: CheckedCreateRequest): RecordAuth | undefined {
  return req.auth === undefined
    ? undefined
    : {
        realm: req.auth.realm,
        passwordFile: passwordPath(rt.config.stateDir, req.name),
        credentialsTtlMs: rt.config.timeouts.credentialsTtlMs,
      };
}

/** The destination policy of a request's proxy: the request's, else the provider's. */
function egressOf(rt: Runtime, req: CheckedCreateRequest): InstanceRecord['egress'] {
  return req.egress ?? rt.config.egress;
}

/**
 * An adopted instance takes the request's password file and destination
 * policy. A proxy started with another realm, or with authentication where
 * the request has none (or the other way round), or with another policy,
 * is stopped, so that it starts again with the request's: a proxy never
 * keeps serving on terms the request did not ask for. So is one whose
 * password file was no longer the provider's (another user's file in its
 * place): it may hold credentials it verified from that file, which a new
 * file would only end after `credentialsTtlMs`.
 */
async function adoptTerms(
  rt: Runtime,
  existing: InstanceRecord,
  req: CheckedCreateRequest,
  ctx: OperationContext,
): Promise<InstanceRecord> {
  const replaced =
    existing.auth !== undefined &&
    existing.pid !== undefined &&
    !(await rt.seam.ownsPasswordFile(req.name, ctx.signal));
  if (req.auth !== undefined) {
    await rt.seam.writePasswordFile(req.name, req.auth.passwordFile, ctx.signal);
  }
  const auth = authOf(rt, req);
  const egress = egressOf(rt, req);
  if (
    !replaced &&
    auth?.realm === existing.auth?.realm &&
    (auth === undefined) === (existing.auth === undefined) &&
    JSON.stringify(egress) === JSON.stringify(existing.egress)
  ) {
    return existing;
  }
  if (existing.pid !== undefined) await rt.seam.kill(existing.name, existing.pid, ctx.signal);
  const restarted: InstanceRecord = {
    ...existing,
    auth,
    egress,
    phase: 'starting',
    pid: undefined,
  };
  await rt.seam.writeState(restarted, ctx.signal);
  return restarted;
}

/** Picks a free address (stable per name and UID), writes the marked state file. */
function allocate(
  rt: Runtime,
  req: CheckedCreateRequest,
  allowedSources: readonly string[],
  signal: AbortSignal | undefined,
): Promise<InstanceRecord> {
  return underAllocation(rt, signal, async () => {
    const address = await pickAddress(rt, req.name, req.uid, req.port, signal);
    const record: InstanceRecord = {
      version: 1,
      name: req.name,
      marks: formatMark({
        uid: req.uid,
        createdAt: rt.clock.now(),
        installation: req.installation,
      }),
      ...atAddress(address),
      port: req.port,
      allowedSources,
      egress: egressOf(rt, req),
      accessLog: accessLogPath(rt.config.stateDir, req.name),
      limits: rt.config.limits,
      auth: authOf(rt, req),
      phase: 'starting',
    };
    await rt.seam.writeState(record, signal);
    return record;
  });
}

/** Refuses a placement this provider cannot honour: another zone, any machine type or image. */
function checkPlacement(rt: Runtime, req: CheckedCreateRequest, ctx: OperationContext): void {
  const p = req.placement;
  const where = `the ${ctx.provider} provider (type local)`;
  for (const field of ['region', 'zone'] as const) {
    const v = p[field];
    if (v !== undefined && v !== '') {
      requireOneOf(ctx.provider, `placement.${field}`, v, [rt.config.zone], `${where} zone`);
    }
  }
  for (const field of ['machineType', 'image'] as const) {
    const v = p[field];
    if (v !== undefined && v !== '') {
      throw ctx.permanent(
        `placement.${field} "${v}" means nothing to ${where}: every proxy is a local process; leave it empty`,
      );
    }
  }
}
