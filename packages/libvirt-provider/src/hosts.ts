/**
 * Connections to the hosts: one pooled connection per host, dialled
 * lazily and redialled once it dies; dedicated connections for image
 * uploads and the Checker. Every dial reads the SSH material afresh, is a
 * `<prefix>.dial` span, and maps SSH failures to a {@link DialError} that
 * says what to fix.
 *
 * @module
 */
import type { Tracer } from '@opentelemetry/api';
import { abortable, type Logger, type SecretSet, withChildSpan } from '@proxy-op/contract';
import { LibvirtError } from '@proxy-op/libvirt-rpc';
import type { Budgets } from './budgets.js';
import { classifyLibvirt, isSshDialError } from './classify.js';
import type { HostConfig, LibvirtConfig } from './config.js';
import { loadSshMaterial } from './credentials.js';
import { DialError } from './errors.js';

import {
  decorateConnection,
  type LibvirtConnection,
  type LibvirtSeam,
  type Transport,
} from './seam.js';

/** Why a connection is dialled: the pooled one, an image upload, or a Checker round. */
export type DialPurpose = 'pooled' | 'upload' | 'check';

/** What the table needs. */
export interface HostTableOptions {
  readonly type: string;
  readonly prefix: string;
  readonly provider: string;
  readonly config: LibvirtConfig;
  readonly transport: Transport;
  readonly secrets: SecretSet;
  readonly logger: Logger;
  readonly tracer: Tracer;
  readonly budgets: Pick<Budgets, 'dial' | 'call' | 'image' | 'start'>;
}

interface Entry {
  conn?: LibvirtConnection | undefined;
  dialing?: Promise<LibvirtConnection> | undefined;
}

/** The per-host connection table of one provider. */
export class HostTable {
  readonly #o: HostTableOptions;
  readonly #entries = new Map<string, Entry>();
  readonly #closing = new AbortController();

  constructor(o: HostTableOptions) {
    this.#o = o;
  }

  /**
   * The pooled connection's seam for `host`, dialled when there is none or
   * the last one died. The dial is shared by everyone waiting for it and is
   * not tied to one caller's signal: a caller that gives up leaves it to
   * finish for the others.
   */
  async pooled(host: HostConfig, signal: AbortSignal | undefined): Promise<LibvirtSeam> {
    let entry = this.#entries.get(host.name);
    if (entry === undefined) {
      entry = {};
      this.#entries.set(host.name, entry);
    }
    if (entry.conn?.isOpen()) return entry.conn.seam;
    if (entry.dialing === undefined) {
      const e = entry;
      const dialing = this.dial(host, 'pooled', this.#closing.signal).then(
        (conn) => {
          e.dialing = undefined;
          e.conn = conn;
          void conn.closed.then(() => {
            if (e.conn === conn) e.conn = undefined;
            this.#o.logger.debug({ host: host.name }, 'libvirt host disconnected');
          });
          return conn;
        },
        (err: unknown) => {
          e.dialing = undefined;
          throw err;
        },
      );
      dialing.catch(() => {});
      entry.dialing = dialing;
    }
    return (await abortable(entry.dialing, signal)).seam;
  }

  /** A connection of its own for `purpose`; the caller closes it. */
  dedicated(
    host: HostConfig,
    purpose: Exclude<DialPurpose, 'pooled'>,
    signal: AbortSignal | undefined,
  ): Promise<LibvirtConnection> {
    const s =
      signal === undefined ? this.#closing.signal : AbortSignal.any([signal, this.#closing.signal]);
    return this.dial(host, purpose, s);
  }

  /**
   * One dial: the SSH material, then the transport, bounded by the dial
   * budget; a `<prefix>.dial` span under the caller's; a debug line for
   * the outcome with the stage that failed.
   */
  dial(host: HostConfig, purpose: DialPurpose, signal: AbortSignal): Promise<LibvirtConnection> {
    const o = this.#o;
    const attrs = {
      [`${o.prefix}.host`]: host.name,
      [`${o.prefix}.address`]: host.address,
      [`${o.prefix}.user`]: host.user,
      [`${o.prefix}.purpose`]: purpose,
    };
    const start = performance.now();
    return withChildSpan(o.tracer, `${o.prefix}.dial`, attrs, async () => {
      const timeout = AbortSignal.timeout(o.budgets.dial);
      const bounded = AbortSignal.any([signal, timeout]);
      try {
        const material = await loadSshMaterial(o.config, o.type, host.name, o.secrets);
        const conn = await o.transport.open(
          {
            name: host.name,
            address: host.address,
            port: host.port,
            user: host.user,
            socket: host.socket,
            uri: host.uri,
            privateKey: material.privateKey,
            hostKey: material.hostKey,
          },
          bounded,
        );
        o.logger.debug(
          { host: host.name, purpose, durationMs: Math.round(performance.now() - start) },
          'libvirt host connected',
        );
        return decorateConnection(conn, {
          prefix: o.prefix,
          provider: o.provider,
          host: host.name,
          logger: o.logger,
          tracer: o.tracer,
          callMs: o.budgets.call,
          // Only an image upload's connection streams for long; a seed upload is one call.
          uploadMs: purpose === 'upload' ? o.budgets.image : o.budgets.call,
          startMs: o.budgets.start,
        });
      } catch (err) {
        const e = this.#dialError(host, err, timeout.aborted && !signal.aborted);
        o.logger.debug(
          {
            host: host.name,
            purpose,
            stage: e.stage,
            durationMs: Math.round(performance.now() - start),
          },
          'libvirt host connect failed',
        );
        throw e;
      }
    });
  }

  #dialError(host: HostConfig, err: unknown, timedOut: boolean): DialError {
    if (DialError.isInstance(err)) return err;
    const { type } = this.#o;
    const where = `${host.user}@${host.address}:${host.port} (host ${host.name})`;
    if (timedOut) {
      return new DialError(
        'timeout',
        host.name,
        `no libvirt connection to ${where} within ${this.#o.budgets.dial} ms`,
        false,
        { cause: err },
      );
    }
    if (isSshDialError(err)) {
      switch (err.stage) {
        case 'hostkey':
          return new DialError(
            'hostkey',
            host.name,
            `the SSH host key of ${host.address}:${host.port} (host ${host.name}) is not accepted by ${type}.knownHostsFile ${this.#o.config.knownHostsFile ?? ''}: check the host's key fingerprint, then add it (ssh-keyscan -p ${host.port} ${host.address}), or fix the host's address`,
            true,
            { cause: err },
          );
        case 'auth':
          return new DialError(
            'auth',
            host.name,
            `${where} refused the key in ${type}.sshKeyFile ${this.#o.config.sshKeyFile}: add its public key to the authorized_keys of ${host.user} on the host, or fix hosts[].user`,
            true,
            { cause: err },
          );
        case 'channel':
          return new DialError(
            'channel',
            host.name,
            `SSH to ${where} works, but libvirtd's socket ${host.socket} cannot be opened: check that libvirtd runs, that ${host.user} may use the socket, and that sshd allows AllowStreamLocalForwarding`,
            false,
            { cause: err },
          );
        default:
          return new DialError(
            'connect',
            host.name,
            `cannot reach ${where} over SSH: ${err.message}`,
            false,
            {
              cause: err,
            },
          );
      }
    }
    if (LibvirtError.isInstance(err)) {
      return new DialError(
        'libvirt',
        host.name,
        `libvirtd on ${where} refused to open ${host.uri}: ${err.message}`,
        classifyLibvirt(err.code) === 'Permanent',
        { cause: err },
      );
    }
    return new DialError(
      'connect',
      host.name,
      `no libvirt connection to ${where}: ${err instanceof Error ? err.message : String(err)}`,
      false,
      { cause: err },
    );
  }

  /** Closes every pooled connection and ends dials in progress. */
  async close(): Promise<void> {
    this.#closing.abort(new Error('provider closed'));
    const conns = [...this.#entries.values()].map((e) => e.conn).filter((c) => c !== undefined);
    this.#entries.clear();
    await Promise.all(conns.map((c) => c.close()));
  }
}
