// Peer: none. Quantities as resource.Quantity reads and prints the common cases.
import { describe, expect, it } from 'vitest';
import { formatQuantity, parseQuantity } from '../src/quota.js';

const canonical = (v: string) => {
  const q = parseQuantity(v);
  if (q === undefined) throw new Error(`not a quantity: ${v}`);
  return formatQuantity(q);
};

describe('quantities', () => {
  it('prints what it reads in canonical form', () => {
    expect(canonical('100m')).toBe('100m');
    expect(canonical('0.5')).toBe('500m');
    expect(canonical('1000m')).toBe('1');
    expect(canonical('2')).toBe('2');
    expect(canonical('1500')).toBe('1500');
    expect(canonical('2000')).toBe('2k');
    expect(canonical('128Mi')).toBe('128Mi');
    expect(canonical('1024Mi')).toBe('1Gi');
    expect(canonical('1.5Gi')).toBe('1536Mi');
    expect(canonical('1e3')).toBe('1k');
    expect(canonical('0')).toBe('0');
  });

  it('refuses what is not a quantity', () => {
    for (const bad of ['', 'abc', '1.2.3', '5 Mi', 'Mi', '1x'])
      expect(parseQuantity(bad)).toBeUndefined();
  });
});
