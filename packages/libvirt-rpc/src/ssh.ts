/**
 * The SSH dialer (`@proxy-op/libvirt-rpc/ssh`): libvirt RPC over an SSH
 * `direct-streamlocal` channel to the daemon's unix socket, built on
 * `ssh2` (an optional peer dependency, loaded only by this entry point).
 *
 * @module
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Duplex } from 'node:stream';
import { Client, type ConnectConfig } from 'ssh2';
import { DEFAULT_SOCKET, type Dialer } from './dialers.js';

/**
 * How the server's host key is checked. Exactly one of:
 *
 * - `{ knownHostsFile }` or `{ knownHosts }`: an OpenSSH known_hosts file
 *   (path or text); plain and hashed (`|1|`) host entries and `@revoked`
 *   markers are understood;
 * - `{ pinned }`: the key's `SHA256:` fingerprint as `ssh-keygen -l`
 *   prints it, or the base64 key blob of a `.pub` line;
 * - `{ insecureIgnoreHostKey: true }`: accept any key. Only for tests.
 */
export type HostKeyPolicy =
  | { knownHostsFile: string }
  | { knownHosts: string }
  | { pinned: string }
  | { insecureIgnoreHostKey: true };

/** Options of {@link sshDialer}. */
export interface SshDialerOptions {
  /** Host name or address. */
  host: string;
  /** Port, 22 by default. */
  port?: number;
  /** User to log in as. */
  username: string;
  /** Private key (OpenSSH or PEM text, or its bytes). */
  privateKey: string | Buffer;
  /** The key's passphrase, if any. */
  passphrase?: string;
  /** Host-key verification; required, see {@link HostKeyPolicy}. */
  hostKey: HostKeyPolicy;
  /** libvirtd's socket on the remote host, `DEFAULT_SOCKET` (of `@proxy-op/libvirt-rpc`) by default. */
  socketPath?: string;
  /** SSH-level keepalive (`keepalive@openssh.com`) interval; 15 s by default, 0 turns it off. */
  keepaliveIntervalMs?: number;
  /** Unanswered SSH keepalives before the connection is dropped; 3 by default. */
  keepaliveCountMax?: number;
  /** Time allowed for the TCP connect and SSH handshake; 20 s by default. */
  readyTimeoutMs?: number;
}

/**
 * The stage at which an SSH dial failed: `hostkey` (verification refused
 * the server's key), `auth` (the server refused the key), `connect`
 * (TCP or handshake), `channel` (the server refused the stream-local
 * channel, e.g. a wrong socket path or forwarding disabled), `aborted`.
 */
export type SshStage = 'hostkey' | 'auth' | 'connect' | 'channel' | 'aborted';

const SSH_BRAND = Symbol.for('@proxy-op/libvirt-rpc.SshDialError');

/** An SSH dial that failed; `stage` says where. Never carries key material. */
export class SshDialError extends Error {
  /** Always `SshDialError`. */
  override readonly name = 'SshDialError';
  /** A stable code: `ERR_SSH_` followed by the stage in capitals. */
  readonly code: string;

  /** `stage` is where it failed; `cause` the underlying error. */
  constructor(
    /** Where the dial failed. */
    readonly stage: SshStage,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = `ERR_SSH_${stage.toUpperCase()}`;
    Object.defineProperty(this, SSH_BRAND, { value: true });
  }

  /** Whether `err` is an SshDialError, also across two installed copies of this package. */
  static isInstance(err: unknown): err is SshDialError {
    return (
      typeof err === 'object' &&
      err !== null &&
      (err as Record<symbol, unknown>)[SSH_BRAND] === true
    );
  }
}

/** The `SHA256:...` fingerprint of a public key blob, as `ssh-keygen -l` prints it. */
export function fingerprint(keyBlob: Uint8Array): string {
  return `SHA256:${createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '')}`;
}

function hostPatterns(host: string, port: number): string[] {
  return port === 22 ? [host, `[${host}]:22`] : [`[${host}]:${port}`];
}

function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    'i',
  );
  return re.test(name);
}

function entryMatches(field: string, names: readonly string[]): boolean {
  if (field.startsWith('|1|')) {
    const [, , salt, hash] = field.split('|');
    if (salt === undefined || hash === undefined) return false;
    const want = Buffer.from(hash, 'base64');
    return names.some((n) => {
      const got = createHmac('sha1', Buffer.from(salt, 'base64')).update(n).digest();
      return got.length === want.length && timingSafeEqual(got, want);
    });
  }
  let matched = false;
  for (const p of field.split(',')) {
    if (p.startsWith('!')) {
      if (names.some((n) => globMatch(p.slice(1), n))) return false;
    } else if (names.some((n) => globMatch(p, n))) {
      matched = true;
    }
  }
  return matched;
}

/**
 * Checks `keyBlob` against known_hosts text for `host:port`: true when a
 * matching entry has this key and no `@revoked` line names it.
 */
export function knownHostsAccepts(
  text: string,
  host: string,
  port: number,
  keyBlob: Uint8Array,
): boolean {
  const names = hostPatterns(host, port);
  const key = Buffer.from(keyBlob);
  let ok = false;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const parts = line.split(/\s+/);
    let marker: string | undefined;
    if (parts[0]?.startsWith('@')) marker = parts.shift();
    const [hostsField, , b64] = parts;
    if (hostsField === undefined || b64 === undefined) continue;
    const blob = Buffer.from(b64, 'base64');
    if (marker === '@revoked') {
      if (blob.equals(key)) return false;
      continue;
    }
    if (marker !== undefined) continue; // @cert-authority: certificates are not supported
    if (entryMatches(hostsField, names) && blob.equals(key)) ok = true;
  }
  return ok;
}

function pinnedAccepts(pin: string, keyBlob: Uint8Array): boolean {
  const p = pin.trim();
  if (p.startsWith('SHA256:')) return fingerprint(keyBlob) === p.replace(/=+$/, '');
  const parts = p.split(/\s+/);
  const b64 = parts.length > 1 ? parts[1] : parts[0];
  return b64 !== undefined && Buffer.from(b64, 'base64').equals(Buffer.from(keyBlob));
}

async function verifier(opts: SshDialerOptions, port: number): Promise<(key: Buffer) => boolean> {
  const policy = opts.hostKey as Partial<{
    knownHostsFile: string;
    knownHosts: string;
    pinned: string;
    insecureIgnoreHostKey: boolean;
  }>;
  if (policy.insecureIgnoreHostKey === true) return () => true;
  if (policy.pinned !== undefined) {
    const pin = policy.pinned;
    return (key) => pinnedAccepts(pin, key);
  }
  const text =
    policy.knownHosts ??
    (policy.knownHostsFile !== undefined
      ? await readFile(policy.knownHostsFile, 'utf8')
      : undefined);
  if (text === undefined) {
    throw new TypeError(
      'sshDialer: hostKey needs knownHostsFile, knownHosts, pinned or insecureIgnoreHostKey',
    );
  }
  return (key) => knownHostsAccepts(text, opts.host, port, key);
}

/**
 * A dialer that logs in over SSH with a key and opens a
 * `direct-streamlocal@openssh.com` channel to libvirtd's socket. Closing
 * the returned stream closes the SSH connection; losing the SSH
 * connection ends the stream (and so fails every pending call).
 */
export function sshDialer(opts: SshDialerOptions): Dialer {
  const port = opts.port ?? 22;
  return async ({ signal }) => {
    if (signal?.aborted) throw new SshDialError('aborted', 'ssh dial: aborted');
    let verify: (key: Buffer) => boolean;
    try {
      verify = await verifier(opts, port);
    } catch (err) {
      if (err instanceof TypeError) throw err;
      throw new SshDialError(
        'hostkey',
        `ssh dial: cannot read known_hosts: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
    const client = new Client();
    return new Promise<Duplex>((resolve, reject) => {
      let hostKeyRefused = false;
      let settled = false;
      const finish = (err: SshDialError | undefined, channel?: Duplex) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        if (err !== undefined) {
          client.end();
          client.destroy();
          reject(err);
        } else if (channel !== undefined) {
          resolve(channel);
        }
      };
      const onAbort = () => finish(new SshDialError('aborted', 'ssh dial: aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      client.on('error', (err: Error & { level?: string }) => {
        if (hostKeyRefused) {
          finish(
            new SshDialError('hostkey', `ssh dial ${opts.host}:${port}: host key not accepted`, {
              cause: err,
            }),
          );
        } else if (err.level === 'client-authentication') {
          finish(
            new SshDialError('auth', `ssh dial ${opts.host}:${port}: authentication refused`, {
              cause: err,
            }),
          );
        } else {
          finish(
            new SshDialError('connect', `ssh dial ${opts.host}:${port}: ${err.message}`, {
              cause: err,
            }),
          );
        }
      });
      client.on('close', () =>
        finish(new SshDialError('connect', `ssh dial ${opts.host}:${port}: connection closed`)),
      );
      client.on('ready', () => {
        const socketPath = opts.socketPath ?? DEFAULT_SOCKET;
        client.openssh_forwardOutStreamLocal(socketPath, (err, channel) => {
          if (err) {
            finish(
              new SshDialError('channel', `ssh channel to ${socketPath}: ${err.message}`, {
                cause: err,
              }),
            );
            return;
          }
          channel.on('close', () => client.end());
          client.on('close', () => channel.destroy());
          finish(undefined, channel);
        });
      });
      const config: ConnectConfig = {
        host: opts.host,
        port,
        username: opts.username,
        privateKey: opts.privateKey,
        hostVerifier: (key: Buffer) => {
          const ok = verify(key);
          if (!ok) hostKeyRefused = true;
          return ok;
        },
        keepaliveInterval: opts.keepaliveIntervalMs ?? 15_000,
        keepaliveCountMax: opts.keepaliveCountMax ?? 3,
        readyTimeout: opts.readyTimeoutMs ?? 20_000,
      };
      if (opts.passphrase !== undefined) config.passphrase = opts.passphrase;
      try {
        client.connect(config);
      } catch (err) {
        finish(new SshDialError('connect', `ssh dial: ${(err as Error).message}`, { cause: err }));
      }
    });
  };
}
