// Peer: none (pure functions).
import { describe, expect, it } from 'vitest';
import { instanceName, MAX_INSTANCE_NAME } from '../src/api/naming.js';

const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

describe('instanceName', () => {
  it('is proxy-<namespace>-<name>-<hash> for ordinary names', () => {
    expect(instanceName('default', 'web')).toMatch(/^proxy-default-web-[0-9a-f]{8}$/);
  });

  it('is stable', () => {
    expect(instanceName('team-a', 'egress')).toBe(instanceName('team-a', 'egress'));
  });

  it.each([
    ['default', 'a'.repeat(253)],
    ['n'.repeat(63), 'x.y.z'],
    ['default', 'UPPER.case_and.dots'],
    ['default', '...'],
    ['default', '-edge-'],
    ['default', 'ünïcode-名前'],
    ['kube-system', 'proxy-1.example.com'],
  ])('is a DNS label of at most 63 characters for %s/%s', (ns, name) => {
    const n = instanceName(ns, name);
    expect(n.length).toBeLessThanOrEqual(MAX_INSTANCE_NAME);
    expect(n).toMatch(LABEL);
    expect(n.startsWith('proxy-')).toBe(true);
  });

  it('keeps names that read alike apart', () => {
    const names = [
      instanceName('a-b', 'c'),
      instanceName('a', 'b-c'),
      instanceName('a', 'b.c'),
      instanceName('default', `${'x'.repeat(100)}1`),
      instanceName('default', `${'x'.repeat(100)}2`),
    ];
    expect(new Set(names).size).toBe(names.length);
  });

  it('rejects non-strings as misuse', () => {
    expect(() => instanceName(undefined as unknown as string, 'x')).toThrow(TypeError);
  });
});

describe('instanceName, second slot', () => {
  it('is the first name with -r, distinct from it and from every first name', () => {
    expect(instanceName('default', 'web', 1)).toBe(`${instanceName('default', 'web')}-r`);
    // A first name ends in 8 hex digits; `r` is not one.
    expect(instanceName('default', 'web', 1)).not.toMatch(/-[0-9a-f]{8}$/);
  });

  it.each([
    ['default', 'a'.repeat(253)],
    ['n'.repeat(63), 'x.y.z'],
    ['default', '...'],
  ])('is a DNS label of at most 63 characters for %s/%s', (ns, name) => {
    const n = instanceName(ns, name, 1);
    expect(n.length).toBeLessThanOrEqual(MAX_INSTANCE_NAME);
    expect(n).toMatch(LABEL);
    expect(n.endsWith('-r')).toBe(true);
    expect(n).not.toBe(instanceName(ns, name));
  });
});
