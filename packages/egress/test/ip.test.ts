// Peer: node:net's address parser, as an oracle for the literal addresses read here; the rest is
// pure functions.
import { isIP } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  addressForms,
  carrierCidrs,
  cidrContains,
  cidrCovers,
  formatCidr,
  formatIp,
  type IpAddress,
  parseCidr,
  parseInetAton,
  parseIp,
} from '../src/ip.js';

const ip = (text: string) => parseIp(text) as IpAddress;

describe('parseIp', () => {
  it('reads what node:net reads as an address, and nothing it does not', () => {
    const cases = [
      '0.0.0.0',
      '255.255.255.255',
      '192.0.2.1',
      '01.2.3.4',
      '256.1.1.1',
      '1.2.3',
      '::',
      '::1',
      '1::',
      'fe80::1',
      '2001:db8::8:800:200c:417a',
      '::ffff:169.254.169.254',
      '64:ff9b::10.0.0.1',
      '1:2:3:4:5:6:7:8',
      '1:2:3:4:5:6:7:8:9',
      '1:2:3:4:5:6:7::',
      '::1:2:3:4:5:6:7',
      '1::2::3',
      ':::',
      '12345::',
      'g::1',
      '1.2.3.4::',
      '::1.2.3.4.5',
      '',
      'example.com',
    ];
    for (const c of cases) expect(parseIp(c) !== undefined, c).toBe(isIP(c) !== 0);
  });

  it('formats IPv6 in its shortest form', () => {
    expect(formatIp(ip('2001:0db8:0000:0000:0000:0000:0000:0001'))).toBe('2001:db8::1');
    expect(formatIp(ip('::ffff:169.254.169.254'))).toBe('::ffff:a9fe:a9fe');
    expect(formatIp(ip('1:0:0:2:0:0:0:3'))).toBe('1:0:0:2::3');
    expect(formatIp(ip('1:0:2:0:3:0:4:0'))).toBe('1:0:2:0:3:0:4:0');
    expect(formatIp(ip('::'))).toBe('::');
    expect(formatIp(ip('[fd00:ec2::254]'))).toBe('fd00:ec2::254');
    expect(formatIp(ip('10.1.2.3'))).toBe('10.1.2.3');
  });
});

describe('parseInetAton', () => {
  it('reads the spellings the C library resolves without DNS', () => {
    expect(parseInetAton('2852039166')).toBe(ip('169.254.169.254').family === 4 ? 0xa9fea9fe : 0);
    expect(parseInetAton('127.1')).toBe(0x7f000001);
    expect(parseInetAton('0x7f.1')).toBe(0x7f000001);
    expect(parseInetAton('0177.0.0.1')).toBe(0x7f000001);
    expect(parseInetAton('0xa9.0xfe.0xa9fe')).toBe(0xa9fea9fe);
    expect(parseInetAton('10.0.258')).toBe(0x0a000102);
  });

  it('refuses what is no address', () => {
    for (const t of ['', '1.2.3.4.5', '256.1', '1.2.3.256', '08.1.1.1', 'example', '1e5', '1..2']) {
      expect(parseInetAton(t), t).toBeUndefined();
    }
    expect(parseInetAton('4294967296')).toBeUndefined();
  });
});

describe('CIDRs', () => {
  it('clears host bits and checks the prefix', () => {
    expect(formatCidr(parseCidr('10.1.2.3/8') as never)).toBe('10.0.0.0/8');
    expect(formatCidr(parseCidr('fd00::1/8') as never)).toBe('fd00::/8');
    expect(formatCidr(parseCidr('192.0.2.1') as never)).toBe('192.0.2.1/32');
    expect(formatCidr(parseCidr('::1') as never)).toBe('::1/128');
    for (const bad of ['10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.0/8/8', 'x/8', '[::1]']) {
      expect(parseCidr(bad), bad).toBeUndefined();
    }
  });

  it('holds the addresses inside and none outside, at every prefix boundary', () => {
    const c = parseCidr('172.16.0.0/12');
    if (c === undefined) throw new Error('no cidr');
    expect(cidrContains(c, ip('172.16.0.0'))).toBe(true);
    expect(cidrContains(c, ip('172.31.255.255'))).toBe(true);
    expect(cidrContains(c, ip('172.32.0.0'))).toBe(false);
    expect(cidrContains(c, ip('172.15.255.255'))).toBe(false);
    const v6 = parseCidr('fe80::/10');
    if (v6 === undefined) throw new Error('no cidr');
    expect(cidrContains(v6, ip('febf:ffff::1'))).toBe(true);
    expect(cidrContains(v6, ip('fec0::'))).toBe(false);
    const wide = parseCidr('2001:db8:1234:5678::/63');
    if (wide === undefined) throw new Error('no cidr');
    expect(cidrContains(wide, ip('2001:db8:1234:5679:ffff::'))).toBe(true);
    expect(cidrContains(wide, ip('2001:db8:1234:567a::'))).toBe(false);
    expect(cidrContains(parseCidr('0.0.0.0/0') as never, ip('8.8.8.8'))).toBe(true);
    expect(cidrContains(parseCidr('::/0') as never, ip('8.8.8.8'))).toBe(false);
  });

  it('knows which range covers which', () => {
    const c = (t: string) => parseCidr(t) as never;
    expect(cidrCovers(c('10.0.0.0/8'), c('10.1.0.0/16'))).toBe(true);
    expect(cidrCovers(c('10.1.0.0/16'), c('10.0.0.0/8'))).toBe(false);
    expect(cidrCovers(c('fc00::/7'), c('fd00:ec2::254'))).toBe(true);
  });
});

describe('addresses that carry an IPv4 address', () => {
  it('are judged as that address too: mapped, compatible and NAT64', () => {
    const v4 = (t: string) => addressForms(ip(t)).map(formatIp);
    expect(v4('::ffff:169.254.169.254')).toEqual(['::ffff:a9fe:a9fe', '169.254.169.254']);
    expect(v4('::127.0.0.1')).toEqual(['::7f00:1', '127.0.0.1']);
    expect(v4('64:ff9b::10.0.0.1')).toEqual(['64:ff9b::a00:1', '10.0.0.1']);
    expect(v4('::1')).toEqual(['::1']);
    expect(v4('::')).toEqual(['::']);
    expect(v4('2001:db8::10.0.0.1')).toEqual(['2001:db8::a00:1']);
  });

  it('an IPv4 address is judged in its mapped form too, as Squid keeps it', () => {
    expect(addressForms(ip('10.0.0.1')).map(formatIp)).toEqual(['10.0.0.1', '::ffff:a00:1']);
    const all6 = parseCidr('::/0');
    if (all6 === undefined) throw new Error('no cidr');
    expect(addressForms(ip('10.0.0.1')).some((f) => cidrContains(all6, f))).toBe(true);
  });

  it('have the IPv6 ranges that carry an IPv4 range, for a matcher without the rule', () => {
    const ranges = carrierCidrs(parseCidr('169.254.0.0/16') as never).map(formatCidr);
    expect(ranges).toEqual(['::a9fe:0/112', '64:ff9b::a9fe:0/112']);
  });
});
