// Peer: none (pure functions).
import { describe, expect, it } from 'vitest';
import {
  type CreateRequest,
  checkCreateRequest,
  isPermanent,
  listInstallation,
} from '../src/index.js';

const ok: CreateRequest = {
  name: 'proxy-a',
  namespace: 'ns',
  uid: 'u1',
  port: 3128,
  cloudInit: new Uint8Array(),
  placement: {},
};

function permanentMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(isPermanent(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error('did not throw');
}

describe('checkCreateRequest', () => {
  it('passes allowed sources through: CIDRs and bare addresses, IPv4 and IPv6', () => {
    const allowedSources = ['10.0.0.0/8', '192.0.2.7', '2001:db8::/32', '::1'];
    expect(checkCreateRequest('p', { ...ok, allowedSources }).allowedSources).toEqual(
      allowedSources,
    );
  });

  it('passes a good destination policy through', () => {
    const egress = { allow: ['10.1.0.0/16', 'db.internal:5432'], connectPorts: [443, '8443'] };
    expect(checkCreateRequest('p', { ...ok, egress }).egress).toEqual(egress);
  });

  it('fills in the default installation', () => {
    expect(checkCreateRequest('p', ok).installation).toBe('default');
    expect(checkCreateRequest('p', { ...ok, installation: 'blue' }).installation).toBe('blue');
  });

  it.each([
    [{ name: 'Proxy' }, /name "Proxy"/],
    [{ name: 'a'.repeat(64) }, /at most 63/],
    [{ uid: '' }, /uid is empty/],
    [{ port: 0 }, /port 0/],
    [{ port: 70000 }, /port 70000/],
    [{ port: 1.5 }, /port 1.5/],
    [{ installation: 'Blue' }, /installation "Blue"/],
    [{ allowedSources: [] }, /allowedSources is empty/],
    [{ allowedSources: ['10.0.0.0/8', 'nope'] }, /allowedSources\[1\]: "nope" does not start/],
    [{ allowedSources: ['10.0.0.0/33'] }, /allowedSources\[0\]: .*prefix length/],
    [
      { egress: { allow: ['10.0.0.0/8', '10.0.0.0/33'] } },
      /^egress\.allow\[1\]: "10\.0\.0\.0\/33" is not a CIDR, address or host name; write 10\.0\.0\.0\/8/,
    ],
    [{ egress: { connectPorts: [70000] } }, /^egress\.connectPorts\[0\]: 70000 is not a port/],
    [{ egress: { allowed: [] } as never }, /^egress\.allowed: unknown field/],
    [{ egress: 'open' as never }, /^egress: must be an object/],
  ])('rejects %j as Permanent naming the field', (patch, want) => {
    expect(permanentMessage(() => checkCreateRequest('p', { ...ok, ...patch }))).toMatch(want);
  });

  it('wrong types are misuse (TypeError)', () => {
    expect(() => checkCreateRequest('p', null as never)).toThrow(TypeError);
    expect(() => checkCreateRequest('p', { ...ok, cloudInit: 'x' as never })).toThrow(TypeError);
    expect(() => checkCreateRequest('p', { ...ok, name: 3 as never })).toThrow(TypeError);
    expect(() => checkCreateRequest('p', { ...ok, allowedSources: '10.0.0.0/8' as never })).toThrow(
      TypeError,
    );
  });

  it('listInstallation checks the installation', () => {
    expect(listInstallation('p', undefined)).toBe('default');
    expect(listInstallation('p', { installation: 'x' })).toBe('x');
    expect(permanentMessage(() => listInstallation('p', { installation: 'X' }))).toMatch(/X/);
  });
});
