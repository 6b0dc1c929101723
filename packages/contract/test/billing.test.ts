// Peer: none (arithmetic and checks on data).
import { describe, expect, it } from 'vitest';
import { billedSeconds, costOf, locationProblems, paidUntil } from '../src/index.js';

const perSecond = { period: 'second', minimumSeconds: 60 } as const;
const perHour = { period: 'hour', minimumSeconds: 0 } as const;
const start = new Date('2026-12-01T10:00:00Z');
const at = (s: number) => new Date(start.getTime() + s * 1000);

describe('billedSeconds', () => {
  it('bills nothing when the backend does not bill', () => {
    expect(billedSeconds('none', 5000)).toBe(0);
  });

  it('bills the minimum for a short life, then each started second', () => {
    expect(billedSeconds(perSecond, 0)).toBe(60);
    expect(billedSeconds(perSecond, 59.2)).toBe(60);
    expect(billedSeconds(perSecond, 60.2)).toBe(61);
    expect(billedSeconds(perSecond, 3600)).toBe(3600);
  });

  it('bills each started hour in full', () => {
    expect(billedSeconds(perHour, 1)).toBe(3600);
    expect(billedSeconds(perHour, 3600)).toBe(3600);
    expect(billedSeconds(perHour, 3601)).toBe(7200);
    expect(billedSeconds({ period: 'minute', minimumSeconds: 600 }, 601)).toBe(660);
  });
});

describe('paidUntil', () => {
  it('is the end of the period under way', () => {
    expect(paidUntil(perHour, start, at(10))).toEqual(at(3600));
    expect(paidUntil(perHour, start, at(3599))).toEqual(at(3600));
    expect(paidUntil(perHour, start, at(3601))).toEqual(at(7200));
  });

  it('covers the minimum, then follows the clock by the second', () => {
    expect(paidUntil(perSecond, start, at(5))).toEqual(at(60));
    expect(paidUntil(perSecond, start, at(90.5))).toEqual(at(91));
  });

  it('is undefined when the backend does not bill', () => {
    expect(paidUntil('none', start, at(10))).toBeUndefined();
  });
});

describe('costOf', () => {
  it('is the billed hours times the price', () => {
    expect(costOf(perHour, 10, 0.0075)).toBeCloseTo(0.0075, 10);
    expect(costOf(perSecond, 1800, 0.02)).toBeCloseTo(0.01, 10);
    expect(costOf('none', 1800, 0.02)).toBe(0);
  });
});

describe('locationProblems', () => {
  it('accepts what providers report, and no location at all', () => {
    expect(locationProblems(undefined)).toEqual([]);
    expect(locationProblems({})).toEqual([]);
    expect(
      locationProblems({ region: 'us-central1', zone: 'us-central1-a', country: 'US' }),
    ).toEqual([]);
    expect(locationProblems({ region: 'fsn1', zone: 'fsn1-dc14', country: 'DE' })).toEqual([]);
  });

  it('names each bad field', () => {
    expect(
      locationProblems({ region: '', zone: 'a zone', country: 'de' }, 'instance.location'),
    ).toEqual([
      'instance.location.region: "" is not a region or zone name',
      'instance.location.zone: "a zone" is not a region or zone name',
      'instance.location.country: "de" is not an upper-case ISO 3166-1 alpha-2 code (DE, US)',
    ]);
    expect(locationProblems('us', 'l')).toEqual(['l: must be an object']);
    expect(locationProblems({ country: 'DEU' })).toHaveLength(1);
  });
});
