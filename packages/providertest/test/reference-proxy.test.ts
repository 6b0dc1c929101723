// Peer: none (pure functions): the reference backend's simulated proxy, held to the order in
// which the forward proxy and Squid's rendered rules judge a request.
import { hashPassword } from '@proxy-op/htpasswd';
import { describe, expect, it } from 'vitest';
import { type ProxiedVm, proxyAnswer } from '../src/reference/proxy.js';

const file = new TextEncoder().encode(`alice:${hashPassword('right-password')}\n`);
const vm: ProxiedVm = { status: 'running', ip: '192.0.2.10', passwordFile: file };
const right = { username: 'alice', password: 'right-password' };
const wrong = { username: 'alice', password: 'wrong-password' };

describe('the simulated proxy', () => {
  it('judges the credential before the destination, as the real proxies do', () => {
    // A refused destination: the metadata address, refused by default.
    expect(proxyAnswer(vm, wrong, '169.254.169.254:80', 0)).toBe(407);
    expect(proxyAnswer(vm, right, '169.254.169.254:80', 0)).toBe(403);
    // Its own address is refused as well.
    expect(proxyAnswer(vm, right, '192.0.2.10:80', 0)).toBe(403);
    // An allowed one.
    expect(proxyAnswer(vm, wrong, '198.51.100.7:80', 0)).toBe(407);
    expect(proxyAnswer(vm, right, '198.51.100.7:80', 0)).toBe(200);
  });

  it('opens what its policy allows, and answers nothing while the VM does not run', () => {
    const opened: ProxiedVm = { ...vm, egress: { allow: ['169.254.169.254/32'] } };
    expect(proxyAnswer(opened, right, '169.254.169.254:80', 0)).toBe(200);
    expect(proxyAnswer({ ...vm, status: 'stopped' }, right, '198.51.100.7:80', 0)).toBeUndefined();
    expect(proxyAnswer(undefined, right, '198.51.100.7:80', 0)).toBeUndefined();
  });
});
