// Peer: none (pure functions).
import { describe, expect, it } from 'vitest';
import { idFormat, isPermanent } from '../src/index.js';

const hosts = idFormat(['hosts', ':host', 'domains', ':name']);
const vms = idFormat(['vms', ':vmid', ':name'], { vmid: /^[1-9][0-9]{2,8}$/ });

describe('idFormat', () => {
  it('formats and parses round-trip', () => {
    const id = hosts.format({ host: 'h1', name: 'proxy-a' });
    expect(id).toBe('hosts/h1/domains/proxy-a');
    expect(hosts.parse(id)).toEqual({ host: 'h1', name: 'proxy-a' });
    expect(hosts.shape).toBe('hosts/<host>/domains/<name>');
  });

  it.each([
    '',
    'hosts/h1/domains',
    'hosts/h1/domains/a/b',
    'host/h1/domains/a',
    'hosts//domains/a',
    'hosts/h1/domains/',
    '/hosts/h1/domains/a',
  ])('rejects %j', (id) => {
    expect(hosts.parse(id)).toBeUndefined();
    let caught: unknown;
    try {
      hosts.mustParse(id, 'kvm-a', 'get');
    } catch (e) {
      caught = e;
    }
    expect(isPermanent(caught)).toBe(true);
    expect((caught as Error).message).toContain('hosts/<host>/domains/<name>');
  });

  it('applies part patterns', () => {
    expect(vms.parse('vms/100/x')).toEqual({ vmid: '100', name: 'x' });
    expect(vms.parse('vms/0100/x')).toBeUndefined();
    expect(vms.parse('vms/99/x')).toBeUndefined();
  });

  it('refuses to format an empty part or one with a slash (misuse)', () => {
    expect(() => hosts.format({ host: '', name: 'a' })).toThrow(TypeError);
    expect(() => hosts.format({ host: 'a/b', name: 'a' })).toThrow(TypeError);
  });

  it('refuses to format a part its pattern refuses, so whatever it formats parses back', () => {
    expect(() => vms.format({ vmid: '042', name: 'a' })).toThrow(/vmid "042" does not match/);
    expect(vms.parse(vms.format({ vmid: '142', name: 'a' }))).toEqual({ vmid: '142', name: 'a' });
  });

  it('parse of a non-string is undefined', () => {
    expect(hosts.parse(42 as unknown as string)).toBeUndefined();
  });
});
