/**
 * The SSH material: the private key and known_hosts, read from their files
 * on every dial (never cached, so a rotated Secret is picked up without a
 * restart), checked before any connection is made, and declared to the
 * shell's secret set as soon as it is read.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import type { SecretSet } from '@proxy-op/contract';
import ssh2 from 'ssh2';
import type { LibvirtConfig } from './config.js';
import { DialError } from './errors.js';
import type { HostKeyCheck } from './seam.js';

/** What a dial needs from the files. */
export interface SshMaterial {
  readonly privateKey: string;
  readonly hostKey: HostKeyCheck;
}

function why(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.name : 'unreadable';
}

/**
 * Reads the key file and, unless `insecureIgnoreHostKey`, the known_hosts
 * file. A file that cannot be read is a Transient {@link DialError} (the
 * Secret may not be mounted yet); a key no SSH client could use is
 * Permanent. Messages name the config field and the path, never the
 * content, and the key is added to `secrets` (whole, and its base64 body)
 * before anything else can see it.
 */
export async function loadSshMaterial(
  config: LibvirtConfig,
  type: string,
  host: string,
  secrets: SecretSet,
): Promise<SshMaterial> {
  let privateKey: string;
  try {
    privateKey = await readFile(config.sshKeyFile, 'utf8');
  } catch (err) {
    throw new DialError(
      'credentials',
      host,
      `cannot read ${type}.sshKeyFile ${config.sshKeyFile} (${why(err)}): mount the SSH key Secret there or fix the path`,
      false,
      { cause: err },
    );
  }
  secrets.add(privateKey);
  const body = privateKey
    .split(/\r?\n/)
    .filter((l) => l !== '' && !l.startsWith('-----'))
    .join('');
  secrets.add(body);
  const parsed = ssh2.utils.parseKey(privateKey);
  if (parsed instanceof Error || (Array.isArray(parsed) && parsed.length === 0)) {
    throw new DialError(
      'credentials',
      host,
      `${type}.sshKeyFile ${config.sshKeyFile} does not hold a private key without a passphrase (OpenSSH or PEM): replace it`,
      true,
    );
  }
  if (config.insecureIgnoreHostKey) return { privateKey, hostKey: { insecureIgnoreHostKey: true } };
  const file = config.knownHostsFile as string;
  let knownHosts: string;
  try {
    knownHosts = await readFile(file, 'utf8');
  } catch (err) {
    throw new DialError(
      'credentials',
      host,
      `cannot read ${type}.knownHostsFile ${file} (${why(err)}): mount the known_hosts Secret there or fix the path`,
      false,
      { cause: err },
    );
  }
  return { privateKey, hostKey: { knownHosts, knownHostsFile: file } };
}
