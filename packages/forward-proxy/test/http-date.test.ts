// Peer: the JavaScript engine's own Date methods: the proxy's time stamps, put together from a
// Date's UTC fields, are the text toISOString() and toUTCString() give, over seeded random times
// and the edges of the years they cover.
import { describe, expect, it } from 'vitest';
import { formatHttpDate, isoTime } from '../src/http-date.js';

/** A seeded generator (mulberry32), so a failure names a time that can be tried again. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const EDGES = [
  0,
  -1,
  Date.UTC(2038, 0, 19, 3, 14, 7, 999),
  Date.UTC(2000, 1, 29, 23, 59, 59, 1),
  Date.UTC(9999, 11, 31, 23, 59, 59, 999),
  new Date('0000-01-01T00:00:00.000Z').getTime(),
  new Date('-000001-12-31T23:59:59.999Z').getTime(),
  new Date('+010000-01-01T00:00:00.000Z').getTime(),
];

describe('the time stamps', () => {
  it('isoTime is what toISOString() writes, over 20,000 times from year 0 to 9999 and the edges', () => {
    const next = random(20261207);
    const lo = new Date('0000-01-01T00:00:00.000Z').getTime();
    const hi = new Date('9999-12-31T23:59:59.999Z').getTime();
    const times = [...EDGES, ...Array.from({ length: 20_000 }, () => lo + next() * (hi - lo))];
    for (const t of times.map(Math.floor))
      expect(isoTime(t), `at ${t}`).toBe(new Date(t).toISOString());
  });

  it('formatHttpDate is what toUTCString() writes, for years 0 to 9999', () => {
    const next = random(7);
    const lo = new Date('0000-01-01T00:00:00.000Z').getTime();
    const hi = new Date('9999-12-31T23:59:59.999Z').getTime();
    const times = [
      ...EDGES.slice(0, 6),
      ...Array.from({ length: 20_000 }, () => lo + next() * (hi - lo)),
    ];
    for (const t of times.map(Math.floor)) {
      expect(formatHttpDate(t), `at ${t}`).toBe(new Date(t).toUTCString());
    }
  });
});
