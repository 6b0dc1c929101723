// Peer: ssh-keygen (OpenSSH) reads every key this package writes.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeWithPeers, sshKeyPair } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'testkit-ssh-key-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The public key ssh-keygen derives from a private key file. */
function derivedPublic(privateKey: string): string {
  const file = join(dir, `key-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, privateKey, { mode: 0o600 });
  return execFileSync('ssh-keygen', ['-y', '-f', file], { encoding: 'utf8' }).trim();
}

/** The 32 public-key bytes of an authorized_keys line. */
function publicBytes(line: string): Buffer {
  const blob = Buffer.from(line.split(' ')[1] ?? '', 'base64');
  const typeLen = blob.readUInt32BE(0);
  const keyLen = blob.readUInt32BE(4 + typeLen);
  return blob.subarray(8 + typeLen, 8 + typeLen + keyLen);
}

describeWithPeers({ describe, it }, 'sshKeyPair', ['ssh-keygen'], () => {
  it('writes a private key ssh-keygen reads, deriving the same public key', () => {
    const pair = sshKeyPair('someone@test');
    expect(pair.private).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----\n/);
    expect(pair.public).toMatch(/^ssh-ed25519 \S+ someone@test$/);
    expect(derivedPublic(pair.private)).toBe(pair.public);
    expect(publicBytes(pair.public)).toHaveLength(32);
  });

  it('keeps a public key that starts with a zero byte at 32 bytes', () => {
    let pair = sshKeyPair();
    let draws = 1;
    while (publicBytes(pair.public)[0] !== 0) {
      pair = sshKeyPair();
      draws++;
      if (draws > 20_000) throw new Error('no key starting with a zero byte in 20000 draws');
    }
    expect(publicBytes(pair.public)).toHaveLength(32);
    expect(derivedPublic(pair.private)).toBe(pair.public);
  });

  it('gives a new key every time', () => {
    expect(sshKeyPair().public).not.toBe(sshKeyPair().public);
  });
});
