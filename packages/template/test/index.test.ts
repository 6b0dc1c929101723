// Peer: none (pure function).
import { describe, expect, it } from 'vitest';
import { greet } from '../src/index.js';

describe('greet', () => {
  it('greets by name', () => {
    expect(greet('proxy-op')).toBe('hello, proxy-op');
  });

  it('rejects an empty name with a TypeError', () => {
    expect(() => greet('')).toThrow(TypeError);
  });
});
