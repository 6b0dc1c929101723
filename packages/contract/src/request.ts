import { egressPolicyProblems } from '@proxy-op/egress';
import { cidrProblem } from './cidr.js';
import { PermanentError } from './errors.js';
import { DEFAULT_INSTALLATION, installationProblem } from './marks.js';
import type { CreateRequest, ListOptions, ProxyAuth } from './types.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** A create request after {@link checkCreateRequest}: the installation is filled in. */
export interface CheckedCreateRequest extends CreateRequest {
  /** The installation id, the default one when the request named none. */
  readonly installation: string;
}

/**
 * The checks every provider runs on a create request before any backend
 * call. Wrong types are programmer misuse (TypeError); bad values are
 * Permanent errors that name the field.
 */
export function checkCreateRequest(provider: string, req: CreateRequest): CheckedCreateRequest {
  if (req === null || typeof req !== 'object') {
    throw new TypeError('create: request must be an object');
  }
  for (const field of ['name', 'namespace', 'uid'] as const) {
    if (typeof req[field] !== 'string')
      throw new TypeError(`create: request.${field} must be a string`);
  }
  if (!(req.cloudInit instanceof Uint8Array)) {
    throw new TypeError('create: request.cloudInit must be a Uint8Array');
  }
  if (req.placement === null || typeof req.placement !== 'object') {
    throw new TypeError('create: request.placement must be an object');
  }
  const bad = (message: string) => new PermanentError({ provider, op: 'create', message });
  if (!DNS_LABEL.test(req.name)) {
    throw bad(
      `name "${req.name}" is not a lowercase DNS label (a-z, 0-9 and "-", at most 63 characters, starting and ending alphanumeric)`,
    );
  }
  if (req.uid === '') throw bad('uid is empty; pass the owning Proxy UID');
  if (!Number.isInteger(req.port) || req.port < 1 || req.port > 65535) {
    throw bad(`port ${String(req.port)} is not a TCP port (an integer from 1 to 65535)`);
  }
  if (req.allowedSources !== undefined) {
    if (!Array.isArray(req.allowedSources)) {
      throw new TypeError('create: request.allowedSources must be an array of strings');
    }
    if (req.allowedSources.length === 0) {
      throw bad('allowedSources is empty: the proxy would serve nobody; name at least one CIDR');
    }
    req.allowedSources.forEach((cidr, i) => {
      const p = cidrProblem(cidr);
      if (p !== undefined) throw bad(`allowedSources[${i}]: ${p}`);
    });
  }
  const installation = req.installation ?? DEFAULT_INSTALLATION;
  const problem = installationProblem(installation);
  if (problem !== undefined) throw bad(`installation ${problem}`);
  if (req.auth !== undefined) checkProxyAuth(provider, 'create', req.auth, 'request.auth');
  if (req.egress !== undefined) {
    const problems = egressPolicyProblems(req.egress);
    if (problems.length > 0) throw bad(problems.join('; '));
  }
  return { ...req, installation };
}

const REALM = /^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,200}$/;

/**
 * The checks on a {@link ProxyAuth} (`create`'s `request.auth`, and
 * `updateAuth`'s argument): wrong types are a TypeError, a bad realm or an
 * empty password file is Permanent and names the field. The file's bytes
 * never appear in the message.
 */
export function checkProxyAuth(
  provider: string,
  op: string,
  auth: ProxyAuth,
  field = 'auth',
): ProxyAuth {
  if (auth === null || typeof auth !== 'object') {
    throw new TypeError(`${op}: ${field} must be an object`);
  }
  if (typeof auth.realm !== 'string') throw new TypeError(`${op}: ${field}.realm must be a string`);
  if (!(auth.passwordFile instanceof Uint8Array)) {
    throw new TypeError(`${op}: ${field}.passwordFile must be a Uint8Array`);
  }
  const bad = (message: string) => new PermanentError({ provider, op, message });
  if (!REALM.test(auth.realm)) {
    throw bad(
      `${field}.realm must be 1 to 200 printable ASCII characters without a quote or backslash (it is written into the proxy's configuration and its challenge)`,
    );
  }
  if (auth.passwordFile.length === 0) {
    throw bad(
      `${field}.passwordFile is empty: the proxy would let nobody in; pass at least one credential`,
    );
  }
  return auth;
}

/** The installation `listByTag` lists, checked; TypeError for a wrong type, Permanent for a bad value. */
export function listInstallation(provider: string, opts: ListOptions | undefined): string {
  const installation = opts?.installation ?? DEFAULT_INSTALLATION;
  if (typeof installation !== 'string')
    throw new TypeError('listByTag: installation must be a string');
  const problem = installationProblem(installation);
  if (problem !== undefined) {
    throw new PermanentError({ provider, op: 'list', message: `installation ${problem}` });
  }
  return installation;
}
