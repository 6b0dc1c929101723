// Peer: none (known_hosts and fingerprint checks, in-process).
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fingerprint, knownHostsAccepts } from '../src/ssh.js';

const key = randomBytes(51);
const other = randomBytes(51);
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');

function hashed(host: string): string {
  const salt = randomBytes(20);
  const hash = createHmac('sha1', salt).update(host).digest();
  return `|1|${b64(salt)}|${b64(hash)}`;
}

describe('known_hosts', () => {
  it('accepts the listed key for host:port and nothing else', () => {
    const text = `# comment\n[10.0.0.5]:2222 ssh-ed25519 ${b64(key)}\n`;
    expect(knownHostsAccepts(text, '10.0.0.5', 2222, key)).toBe(true);
    expect(knownHostsAccepts(text, '10.0.0.5', 2222, other)).toBe(false);
    expect(knownHostsAccepts(text, '10.0.0.5', 22, key)).toBe(false);
    expect(knownHostsAccepts(text, '10.0.0.6', 2222, key)).toBe(false);
  });

  it('names port 22 hosts without brackets, and takes host lists and wildcards', () => {
    const text = `kvm1,kvm1.example.com ssh-ed25519 ${b64(key)}\n*.lab ssh-rsa ${b64(other)}\n`;
    expect(knownHostsAccepts(text, 'kvm1.example.com', 22, key)).toBe(true);
    expect(knownHostsAccepts(text, 'box.lab', 22, other)).toBe(true);
    expect(knownHostsAccepts(text, 'box.lab', 22, key)).toBe(false);
  });

  it('matches hashed host names', () => {
    const text = `${hashed('[127.0.0.1]:2200')} ssh-ed25519 ${b64(key)}\n`;
    expect(knownHostsAccepts(text, '127.0.0.1', 2200, key)).toBe(true);
    expect(knownHostsAccepts(text, '127.0.0.1', 2201, key)).toBe(false);
  });

  it('honours negated patterns and @revoked keys', () => {
    expect(knownHostsAccepts(`*,!bad ssh-ed25519 ${b64(key)}\n`, 'bad', 22, key)).toBe(false);
    const text = `kvm1 ssh-ed25519 ${b64(key)}\n@revoked * ssh-ed25519 ${b64(key)}\n`;
    expect(knownHostsAccepts(text, 'kvm1', 22, key)).toBe(false);
  });

  it('computes fingerprints as ssh-keygen prints them', () => {
    const want = `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
    expect(fingerprint(key)).toBe(want);
    expect(fingerprint(key)).not.toMatch(/=$/);
  });
});
