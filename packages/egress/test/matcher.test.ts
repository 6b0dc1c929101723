// Peer: none (the policy's pure functions).
import { describe, expect, it } from 'vitest';
import {
  compileEgressPolicy,
  DEFAULT_REFUSED_RANGES,
  type EgressPolicy,
  egressPolicyProblems,
} from '../src/index.js';

describe('the defaults', () => {
  const m = compileEgressPolicy(undefined, { ownAddresses: ['198.51.100.7', '2001:db8::7'] });

  it('refuse every default range, each spelling of it, and name the rule', () => {
    const cases: [string, string][] = [
      ['0.0.0.0', 'this-network'],
      ['0.1.2.3', 'this-network'],
      ['::', 'unspecified'],
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['::1', 'loopback'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::127.0.0.1', 'loopback'],
      ['64:ff9b::127.0.0.1', 'loopback'],
      ['169.254.169.254', 'link-local'],
      ['::ffff:169.254.169.254', 'link-local'],
      ['64:ff9b::a9fe:a9fe', 'link-local'],
      ['fe80::1', 'link-local'],
      ['fd00:ec2::254', 'metadata'],
      ['168.63.129.16', 'metadata'],
      ['100.64.0.1', 'shared'],
      ['100.100.100.200', 'shared'],
      ['10.0.0.1', 'private'],
      ['172.16.5.4', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.1', 'private'],
      ['fc00::1', 'private'],
      ['fd12:3456::1', 'private'],
      ['224.0.0.251', 'multicast'],
      ['239.255.255.250', 'multicast'],
      ['ff02::1', 'multicast'],
      ['255.255.255.255', 'broadcast'],
      ['198.51.100.7', 'host-address'],
      ['2001:db8::7', 'host-address'],
      ['::ffff:198.51.100.7', 'host-address'],
    ];
    for (const [address, rule] of cases) {
      expect(m.checkAddress(address, 80, 'http'), address).toBe(rule);
      expect(m.checkAddress(address, 443, 'connect'), address).toBe(rule);
    }
    expect(DEFAULT_REFUSED_RANGES.length).toBeGreaterThanOrEqual(16);
  });

  it('admit public destinations on the default ports only', () => {
    for (const address of [
      '93.184.215.14',
      '2606:2800:21f:cb07:6820:80da:af6b:8b2c',
      '172.32.0.1',
    ]) {
      expect(m.checkAddress(address, 80, 'http'), address).toBeUndefined();
      expect(m.checkAddress(address, 443, 'http'), address).toBeUndefined();
      expect(m.checkAddress(address, 8080, 'http'), address).toBeUndefined();
      expect(m.checkAddress(address, 443, 'connect'), address).toBeUndefined();
      expect(m.checkAddress(address, 22, 'http'), address).toBe('port');
      expect(m.checkAddress(address, 1024, 'http'), address).toBe('port');
      expect(m.checkAddress(address, 80, 'connect'), address).toBe('port');
      expect(m.checkAddress(address, 8443, 'connect'), address).toBe('port');
    }
  });

  it('read literal hosts in every spelling before resolution', () => {
    expect(m.checkHost('2852039166', 80, 'http')).toBe('link-local');
    expect(m.checkHost('0xa9fea9fe', 80, 'http')).toBe('link-local');
    expect(m.checkHost('127.1', 80, 'http')).toBe('loopback');
    expect(m.checkHost('0x7f.1', 80, 'http')).toBe('loopback');
    expect(m.checkHost('0177.0.0.1', 80, 'http')).toBe('loopback');
    expect(m.checkHost('[::ffff:169.254.169.254]', 80, 'http')).toBe('link-local');
    expect(m.checkHost('::ffff:a9fe:a9fe', 80, 'http')).toBe('link-local');
    expect(m.literalAddress('2852039166')).toBe('169.254.169.254');
    expect(m.literalAddress('[::FFFF:169.254.169.254]')).toBe('::ffff:a9fe:a9fe');
    expect(m.literalAddress('example.com')).toBeUndefined();
  });

  it('let a name on to resolution, unless its port is refused', () => {
    expect(m.checkHost('example.com', 80, 'http')).toBeUndefined();
    expect(m.checkHost('example.com', 443, 'connect')).toBeUndefined();
    expect(m.checkHost('example.com', 25, 'http')).toBe('port');
    expect(m.checkHost('example.com', 22, 'connect')).toBe('port');
  });
});

describe('allow and deny', () => {
  const policy: EgressPolicy = {
    allow: [
      '10.0.0.0/8',
      '127.0.0.1:8080',
      'internal.example:8000-8100',
      '*.corp.example',
      '[fd00::5]:9000',
    ],
    deny: ['10.9.0.0/16', 'blocked.example', '*.evil.example:443'],
  };
  const m = compileEgressPolicy(policy, { ownAddresses: ['10.0.0.4'] });

  it('an allow entry exempts from the default ranges and its own address', () => {
    expect(m.checkAddress('10.1.2.3', 80, 'http')).toBeUndefined();
    expect(m.checkAddress('::ffff:10.1.2.3', 80, 'http')).toBeUndefined();
    expect(m.checkAddress('10.0.0.4', 80, 'http')).toBeUndefined();
    // Without a port of its own it admits no port: CONNECT still needs 443.
    expect(m.checkAddress('10.1.2.3', 22, 'connect')).toBe('port');
    expect(m.checkAddress('10.1.2.3', 443, 'connect')).toBeUndefined();
  });

  it('an allow entry with a port admits that port, and matches on it only', () => {
    expect(m.checkAddress('127.0.0.1', 8080, 'http')).toBeUndefined();
    expect(m.checkAddress('127.0.0.1', 8080, 'connect')).toBeUndefined();
    expect(m.checkAddress('127.0.0.1', 8081, 'http')).toBe('loopback');
    expect(m.checkAddress('127.0.0.2', 8080, 'http')).toBe('loopback');
    expect(m.checkAddress('fd00::5', 9000, 'connect')).toBeUndefined();
    expect(m.checkAddress('fd00::5', 9001, 'connect')).toBe('private');
    expect(m.checkAddress('2001:db8::5', 9000, 'connect')).toBe('port');
  });

  it('a name entry matches the name the request gave, before and after resolution', () => {
    expect(m.checkHost('internal.example', 8050, 'connect')).toBeUndefined();
    expect(m.checkAddress('192.168.7.7', 8050, 'connect', 'internal.example')).toBeUndefined();
    expect(m.checkAddress('192.168.7.7', 8050, 'connect', 'INTERNAL.example.')).toBeUndefined();
    expect(m.checkAddress('192.168.7.7', 8050, 'connect', 'other.example')).toBe('private');
    expect(m.checkAddress('192.0.2.7', 8050, 'connect', 'other.example')).toBe('port');
    expect(m.checkAddress('192.168.7.7', 8050, 'http', 'other.example')).toBe('private');
    expect(m.checkAddress('192.168.7.7', 8200, 'http', 'internal.example')).toBe('private');
  });

  it('a glob matches the names under its suffix, not the suffix', () => {
    expect(m.checkAddress('192.168.1.1', 80, 'http', 'git.corp.example')).toBeUndefined();
    expect(m.checkAddress('192.168.1.1', 80, 'http', 'a.b.corp.example')).toBeUndefined();
    expect(m.checkAddress('192.168.1.1', 80, 'http', 'corp.example')).toBe('private');
    expect(m.checkAddress('192.168.1.1', 80, 'http', 'xcorp.example')).toBe('private');
  });

  it('deny wins over allow, by address, by name and by port', () => {
    expect(m.checkAddress('10.9.1.1', 80, 'http')).toBe('denied');
    expect(m.checkAddress('::ffff:10.9.1.1', 80, 'http')).toBe('denied');
    expect(m.checkHost('blocked.example', 80, 'http')).toBe('denied');
    expect(m.checkHost('Blocked.Example.', 80, 'http')).toBe('denied');
    expect(m.checkAddress('93.184.215.14', 80, 'http', 'blocked.example')).toBe('denied');
    expect(m.checkHost('www.evil.example', 443, 'connect')).toBe('denied');
    expect(m.checkHost('www.evil.example', 80, 'http')).toBeUndefined();
  });

  it('a port named by an address entry keeps a name open until its addresses are known', () => {
    const p = compileEgressPolicy({ allow: ['10.0.0.5:8080'] });
    expect(p.checkHost('svc.example', 8080, 'connect')).toBeUndefined();
    expect(p.checkAddress('10.0.0.5', 8080, 'connect', 'svc.example')).toBeUndefined();
    expect(p.checkAddress('10.0.0.6', 8080, 'connect', 'svc.example')).toBe('private');
    expect(p.checkAddress('192.0.2.6', 8080, 'connect', 'svc.example')).toBe('port');
    expect(p.checkHost('svc.example', 8081, 'connect')).toBe('port');
  });
});

describe('the proxy itself', () => {
  it('is refused at its listening address and port, whatever the lists say', () => {
    const m = compileEgressPolicy(
      { allow: ['127.0.0.0/8:1-65535', '0.0.0.0/0'] },
      { listening: [{ address: '127.0.0.5', port: 3128 }] },
    );
    expect(m.checkAddress('127.0.0.5', 3128, 'connect')).toBe('own-address');
    expect(m.checkAddress('::ffff:127.0.0.5', 3128, 'http')).toBe('own-address');
    expect(m.checkHost('127.0.0.5', 3128, 'http')).toBe('own-address');
    expect(m.checkAddress('0.0.0.0', 3128, 'http')).toBe('own-address');
    expect(m.checkAddress('127.0.0.5', 3129, 'connect')).toBeUndefined();
    expect(m.checkAddress('127.0.0.6', 3128, 'connect')).toBeUndefined();
  });

  it('listening on every address, is refused at each of its own and loopback', () => {
    const m = compileEgressPolicy(
      { allow: ['0.0.0.0/0:1-65535', '[::/0]:1-65535'] },
      { listening: [{ address: '::', port: 3128 }], ownAddresses: () => OWN },
    );
    for (const a of ['127.0.0.1', '127.3.2.1', '::1', '::', '192.0.2.10', '::ffff:192.0.2.10']) {
      expect(m.checkAddress(a, 3128, 'connect'), a).toBe('own-address');
    }
    expect(m.checkAddress('192.0.2.11', 3128, 'connect')).toBeUndefined();
    expect(m.checkAddress('192.0.2.10', 3129, 'connect')).toBeUndefined();
  });
});

const OWN: readonly string[] = ['192.0.2.10', 'fe80::1'];

describe('egressPolicyProblems', () => {
  it('names the field path and the fix for each problem', () => {
    expect(
      egressPolicyProblems({
        allow: ['10.0.0.0/8', 'api.example.com', '10.0.0.0/33', '127.1', '*', 'a..b', 'x:99999'],
        deny: 'nope',
        connectPorts: [443, '8000-8100', 0, '9-8', 'https'],
        httpPorts: [80],
        other: true,
      }),
    ).toEqual([
      'egress.other: unknown field; use allow, deny, connectPorts or httpPorts',
      'egress.allow[2]: "10.0.0.0/33" is not a CIDR, address or host name; write 10.0.0.0/8 or api.example.com (a port after a colon: 10.0.0.5:8080, [fd00::1]:443)',
      'egress.allow[3]: "127.1" is not a CIDR, address or host name; write 10.0.0.0/8 or api.example.com (a port after a colon: 10.0.0.5:8080, [fd00::1]:443)',
      'egress.allow[4]: "*" is not a CIDR, address or host name; write 10.0.0.0/8 or api.example.com (a port after a colon: 10.0.0.5:8080, [fd00::1]:443)',
      'egress.allow[5]: "a..b" is not a CIDR, address or host name; write 10.0.0.0/8 or api.example.com (a port after a colon: 10.0.0.5:8080, [fd00::1]:443)',
      'egress.allow[6]: "x:99999" is not a CIDR, address or host name; write 10.0.0.0/8 or api.example.com (a port after a colon: 10.0.0.5:8080, [fd00::1]:443)',
      'egress.deny: must be a list of at most 1024 strings',
      'egress.connectPorts[2]: 0 is not a port or port range; write 443 or "8000-8100" (1 to 65535)',
      'egress.connectPorts[3]: "9-8" is not a port or port range; write 443 or "8000-8100" (1 to 65535)',
      'egress.connectPorts[4]: "https" is not a port or port range; write 443 or "8000-8100" (1 to 65535)',
    ]);
  });

  it('takes the field name of the caller, and nothing but an object', () => {
    expect(egressPolicyProblems([], 'spec.egress')).toEqual([
      'spec.egress: must be an object with allow, deny, connectPorts or httpPorts',
    ]);
    expect(egressPolicyProblems(undefined)).toEqual([]);
    expect(egressPolicyProblems({})).toEqual([]);
    expect(
      egressPolicyProblems({ allow: ['[fd00::1]:443', '[fd00::/8]', 'fd00::1', '10.0.0.5:80-90'] }),
    ).toEqual([]);
  });

  it('is what compileEgressPolicy throws', () => {
    expect(() => compileEgressPolicy({ allow: ['10.0.0.0/33'] })).toThrow(
      new TypeError(
        'egress.allow[0]: "10.0.0.0/33" is not a CIDR, address or host name; write 10.0.0.0/8 or api.example.com (a port after a colon: 10.0.0.5:8080, [fd00::1]:443)',
      ),
    );
  });
});
