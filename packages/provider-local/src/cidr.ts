/**
 * Loopback ranges for instances: the hosts of a range, and why a range
 * cannot serve.
 *
 * @module
 */
import { isIPv4 } from 'node:net';
import { cidrProblem } from '@proxy-op/contract/cidr';

/** The IPv4 addresses of a loopback range for instances: no network, broadcast or 127.0.0.1. */
export function loopbackHosts(range: string): string[] {
  const [addr = '', prefixText = '32'] = range.split('/');
  const prefix = Number(prefixText);
  const base = ipv4ToInt(addr);
  const size = 2 ** (32 - prefix);
  const network = prefix === 32 ? base : base - (base % size);
  const out: string[] = [];
  for (let i = 0; i < size; i++) {
    if (size > 2 && (i === 0 || i === size - 1)) continue;
    const ip = intToIpv4(network + i);
    if (ip === '127.0.0.1') continue;
    out.push(ip);
  }
  return out;
}

/** Why `range` is not a loopback IPv4 range for instances, or undefined. */
export function loopbackRangeProblem(range: unknown): string | undefined {
  const problem = cidrProblem(range);
  if (problem !== undefined) return problem;
  const [addr = '', prefix = '32'] = (range as string).split('/');
  if (!isIPv4(addr)) return `"${String(range)}" is not an IPv4 range`;
  if (!addr.startsWith('127.') || Number(prefix) < 8) {
    return `"${String(range)}" is not inside 127.0.0.0/8`;
  }
  if (Number(prefix) < 16) return `"${String(range)}" is too large; use a prefix of 16 or more`;
  if (loopbackHosts(range as string).length === 0) return `"${String(range)}" has no usable host`;
  return undefined;
}

function ipv4ToInt(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function intToIpv4(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
}
