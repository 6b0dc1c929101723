/**
 * An instance's state file, `<stateDir>/<name>.json`: its shape, where it
 * is, and how its text is read. The proxy program reads the same file at
 * start.
 *
 * @module
 */
import { join } from 'node:path';
import type { EgressPolicy } from '@proxy-op/egress';
import type { ProxyLimits } from '@proxy-op/forward-proxy';

/** Where an instance is in its life, as its state file says. */
export type Phase = 'starting' | 'running' | (string & {});

/** One instance's state file: the proxy's config, its marks and its pid. */
export interface InstanceRecord {
  /** The file format version (1). */
  readonly version: 1;
  /** The instance name (the file is `<name>.json`). */
  readonly name: string;
  /** The ownership mark as key/value pairs; empty when the instance is not proxy-op's. */
  readonly marks: Readonly<Record<string, string>>;
  /** The loopback address the proxy listens on; absent before one is allocated. */
  readonly address?: string | undefined;
  /**
   * The source address of the proxy's connections to loopback origins: its
   * own address, so an origin on this machine sees which proxy a request
   * came through, as it would see a VM's address.
   */
  readonly outgoingAddress?: string | undefined;
  /** The TCP port the proxy listens on. */
  readonly port: number;
  /** CIDRs whose clients may use the proxy. */
  readonly allowedSources: readonly string[];
  /**
   * CIDRs whose clients may ask `GET /healthz` and nothing else: the
   * proxy's own address, which the provider's health checks come from, so
   * they are answered whatever `allowedSources` says.
   */
  readonly healthSources?: readonly string[] | undefined;
  /**
   * The destination policy (`@proxy-op/egress`): the request's, else the
   * provider's `egress`; absent, the forward proxy's safe default.
   */
  readonly egress?: EgressPolicy | undefined;
  /** The access log file (JSON lines). */
  readonly accessLog: string;
  /** The proxy's resource bounds. */
  readonly limits?: Partial<ProxyLimits> | undefined;
  /**
   * Basic authentication: the realm and the password file the proxy reads
   * (`<name>.passwd` beside this file, re-read when it changes); absent for
   * a proxy that checks sources only.
   */
  readonly auth?: RecordAuth | undefined;
  /** `starting` before the process is spawned, `running` after; anything else is unknown. */
  readonly phase: Phase;
  /** The process id, once spawned. */
  readonly pid?: number | undefined;
}

/** A record's authentication block, as the proxy program reads it. */
export interface RecordAuth {
  /** The realm of the proxy's `407` challenge. */
  readonly realm: string;
  /** The password file's path. */
  readonly passwordFile: string;
  /** How long a verified credential is kept, in ms. */
  readonly credentialsTtlMs?: number | undefined;
}

/**
 * The fields of a record that follow from its address: the address the
 * proxy listens on, the source of its connections to loopback origins, and
 * its health source (the provider probes from the proxy's own address).
 */
export function atAddress(
  address: string,
): Pick<InstanceRecord, 'address' | 'outgoingAddress' | 'healthSources'> {
  return { address, outgoingAddress: address, healthSources: [`${address}/32`] };
}

/** The state file of `name` in `stateDir`. */
export function statePath(stateDir: string, name: string): string {
  return join(stateDir, `${name}.json`);
}

/** The password file of `name` in `stateDir`. */
export function passwordPath(stateDir: string, name: string): string {
  return join(stateDir, `${name}.passwd`);
}

/** The diagnostics log of `name` in `stateDir`: the proxy process's output. */
export function logPath(stateDir: string, name: string): string {
  return join(stateDir, `${name}.log`);
}

/** The access log of `name` in `stateDir`: one JSON line per request. */
export function accessLogPath(stateDir: string, name: string): string {
  return join(stateDir, `${name}.access.log`);
}

/** The largest state file read, in bytes: a record is well under 1 KiB. */
export const RECORD_MAX_BYTES = 64 * 1024;

/** A state file's name in the folder; the first group is the instance name. */
export const STATE_FILE = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\.json$/;

/** Parses a state file's text; an unreadable one is a record without marks. */
export function parseRecord(name: string, text: string): InstanceRecord {
  try {
    const o = JSON.parse(text) as Partial<InstanceRecord>;
    if (typeof o !== 'object' || o === null) throw new Error('not an object');
    const marks: Record<string, string> = {};
    for (const [k, v] of Object.entries(o.marks ?? {})) if (typeof v === 'string') marks[k] = v;
    return {
      version: 1,
      name,
      marks,
      address: typeof o.address === 'string' ? o.address : undefined,
      outgoingAddress: typeof o.outgoingAddress === 'string' ? o.outgoingAddress : undefined,
      port: typeof o.port === 'number' ? o.port : 0,
      allowedSources: Array.isArray(o.allowedSources) ? o.allowedSources : [],
      healthSources: Array.isArray(o.healthSources) ? o.healthSources : undefined,
      egress: typeof o.egress === 'object' && o.egress !== null ? o.egress : undefined,
      accessLog: typeof o.accessLog === 'string' ? o.accessLog : '',
      limits: o.limits,
      auth: readAuth(o.auth),
      phase: typeof o.phase === 'string' ? o.phase : 'unknown',
      pid: typeof o.pid === 'number' ? o.pid : undefined,
    };
  } catch {
    return {
      version: 1,
      name,
      marks: {},
      port: 0,
      allowedSources: [],
      accessLog: '',
      phase: 'unknown',
    };
  }
}

function readAuth(v: unknown): RecordAuth | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { realm, passwordFile, credentialsTtlMs } = v as Partial<RecordAuth>;
  if (typeof realm !== 'string' || typeof passwordFile !== 'string') return undefined;
  return typeof credentialsTtlMs === 'number'
    ? { realm, passwordFile, credentialsTtlMs }
    : { realm, passwordFile };
}
