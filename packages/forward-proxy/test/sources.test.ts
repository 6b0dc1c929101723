// Peer: none (pure functions): the proxy's source lists.
import { describe, expect, it } from 'vitest';
import { sourceKey, sourceList } from '../src/sources.js';

describe('addresses and sources', () => {
  it('matches IPv4, IPv6 and IPv4-mapped sources, and refuses a list with a bad CIDR', () => {
    const list = sourceList(['127.0.0.1/32', '10.0.0.0/8', 'fd00::/8']);
    expect(list.allows('127.0.0.1')).toBe(true);
    expect(list.allows('::ffff:10.1.2.3')).toBe(true);
    expect(list.allows('fd12::1')).toBe(true);
    expect(list.allows('127.0.0.200')).toBe(false);
    expect(list.allows(undefined)).toBe(false);
    expect(() => sourceList(['10.0.0.0/40'])).toThrow(/prefix length/);
  });

  it('counts a source per IPv4 address (mapped ones too) and per IPv6 /64', () => {
    expect(sourceKey('10.1.2.3')).toBe('10.1.2.3');
    expect(sourceKey('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(sourceKey('2001:db8:1:2::5')).toBe('2001:db8:1:2::/64');
    expect(sourceKey('2001:db8:1:2:ffff:0:0:9')).toBe(sourceKey('2001:db8:1:2::5'));
    expect(sourceKey('2001:db8:1:3::5')).not.toBe(sourceKey('2001:db8:1:2::5'));
    expect(sourceKey('::1')).toBe('::/64');
    expect(sourceKey(undefined)).toBe('');
  });
});
