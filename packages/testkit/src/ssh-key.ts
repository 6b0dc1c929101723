import { generateKeyPairSync, randomBytes } from 'node:crypto';

export interface SshKeyPair {
  /** The private key in OpenSSH's own format (`-----BEGIN OPENSSH PRIVATE KEY-----`), unencrypted. */
  readonly private: string;
  /** The public key as one `authorized_keys` line: `ssh-ed25519 <base64> <comment>`. */
  readonly public: string;
}

/** An SSH wire string: a 32-bit big-endian length, then the bytes. */
function sshString(data: Buffer | string): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data) : data;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length);
  return Buffer.concat([len, body]);
}

/**
 * A fresh ed25519 key pair in the formats `ssh-keygen` writes, made with
 * node:crypto. The public key is always 32 bytes on the wire, including
 * the one key in 256 whose first byte is zero.
 */
export function sshKeyPair(comment = 'proxy-op-test'): SshKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const jwk = privateKey.export({ format: 'jwk' });
  const pub = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
  const seed = Buffer.from(jwk.d ?? '', 'base64url');
  if (pub.length !== 32 || seed.length !== 32) throw new Error('ed25519 key of unexpected size');
  const blob = Buffer.concat([sshString('ssh-ed25519'), sshString(pub)]);
  const check = randomBytes(4);
  let section = Buffer.concat([
    check,
    check,
    sshString('ssh-ed25519'),
    sshString(pub),
    sshString(Buffer.concat([seed, pub])),
    sshString(comment),
  ]);
  const pad: number[] = [];
  for (let i = 1; (section.length + pad.length) % 8 !== 0; i++) pad.push(i);
  section = Buffer.concat([section, Buffer.from(pad)]);
  const nkeys = Buffer.alloc(4);
  nkeys.writeUInt32BE(1);
  const body = Buffer.concat([
    Buffer.from('openssh-key-v1\0'),
    sshString('none'),
    sshString('none'),
    sshString(''),
    nkeys,
    sshString(blob),
    sshString(section),
  ]).toString('base64');
  const lines = body.match(/.{1,70}/g) ?? [];
  return {
    private: `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines.join('\n')}\n-----END OPENSSH PRIVATE KEY-----\n`,
    public: `ssh-ed25519 ${blob.toString('base64')} ${comment}`,
  };
}
