import { describe, expect, it } from 'vitest';
import { type Parent, ParentSet } from '../src/parents.js';
import { type ConnectionPin, SessionTable, steerOf } from '../src/steering.js';
import {
  DEFAULT_SESSION_TTL_MS,
  formatUserName,
  parseUserParams,
  splitUserName,
  type UserParams,
} from '../src/user-params.js';

const users = new Set(['alice', 'gw-client', 'gw']);
const isUser = (u: string) => users.has(u);

/** The parameters of a whole user name, or its problem. */
function read(name: string): { user: string; params: UserParams | { problem: string } } {
  const { user, rest } = splitUserName(name, isUser);
  return { user, params: parseUserParams(rest) };
}

describe('the user name grammar', () => {
  it('finds the user as the longest known prefix, so a user may hold "-"', () => {
    expect(read('alice').user).toBe('alice');
    expect(read('alice').params).toEqual({});
    expect(read('gw-client').user).toBe('gw-client');
    expect(read('gw-client-session-a1').user).toBe('gw-client');
    expect(read('gw-session-a1').user).toBe('gw');
    // No prefix is a user: the whole name is checked (and fails as any unknown user).
    expect(splitUserName('bob-session-x', isUser)).toEqual({
      user: 'bob-session-x',
      rest: undefined,
    });
  });

  it('reads every key, with its value normalised', () => {
    expect(read('alice-session-Abc_9-ttl-30s').params).toEqual({ session: 'Abc_9', ttlMs: 30_000 });
    expect(read('alice-session-x-ttl-10m').params).toMatchObject({ ttlMs: 600_000 });
    expect(read('alice-session-x-ttl-24h').params).toMatchObject({ ttlMs: 86_400_000 });
    expect(read('alice-rotate-request').params).toEqual({ rotate: 'request' });
    expect(read('alice-rotate-connection').params).toEqual({ rotate: 'connection' });
    expect(read('alice-country-de-region-eu-central-1-provider-aws').params).toEqual({
      country: 'DE',
      region: 'eu-central-1',
      provider: 'aws',
    });
    // A dashed value runs to the next key, in any order.
    expect(read('alice-provider-local-a-session-s1').params).toEqual({
      provider: 'local-a',
      session: 's1',
    });
    expect(read('alice-region-FSN1').params).toEqual({ region: 'fsn1' });
  });

  it.each([
    ['alice-contry-de', '"contry" is unknown'],
    ['alice-session', '"session" has no value'],
    ['alice-session-', '"session" has no value'],
    ['alice-', 'ends in "-"'],
    ['alice-session-a-session-b', 'gives "session" twice'],
    ['alice-session-a.b', '"session-a.b" is not valid; a session id is 1 to 64'],
    [`alice-session-${'x'.repeat(65)}`, 'a session id is 1 to 64'],
    ['alice-session-a-ttl-0s', '"ttl-0s" is not valid; give a duration from 1s to 24h'],
    ['alice-session-a-ttl-25h', '"ttl-25h" is not valid'],
    ['alice-session-a-ttl-10', '"ttl-10" is not valid'],
    ['alice-session-a-ttl-1d', '"ttl-1d" is not valid'],
    ['alice-ttl-10m', '"ttl" applies to a session; add session-ID'],
    ['alice-session-a-rotate-request', 'both "session" and "rotate"'],
    ['alice-rotate-often', '"rotate-often" is not valid; use request or connection'],
    ['alice-country-deu', '"country-deu" is not valid; give a two-letter country code'],
    ['alice-country-d3', '"country-d3" is not valid'],
    ['alice-region-a%20b', '"region" is not valid'],
  ])('refuses %s, naming the parameter', (name, problem) => {
    const { params } = read(name);
    expect(params).toHaveProperty('problem');
    expect((params as { problem: string }).problem).toContain(problem);
  });

  it('builds the user names it reads', () => {
    const all: UserParams[] = [
      { session: 's1', ttlMs: 30_000 },
      { session: 's2', ttlMs: 7_200_000, country: 'DE' },
      { rotate: 'request', region: 'eu-central-1', provider: 'aws' },
      { session: 's3', ttlMs: 600_000, provider: 'local-a' },
    ];
    for (const p of all)
      expect(read(formatUserName('gw-client', p))).toEqual({ user: 'gw-client', params: p });
  });
});

describe('sessions', () => {
  it('are kept for their TTL after their last use, and the longest unused goes first at the bound', () => {
    const t = new SessionTable<string>();
    t.hold('s', 'a', 1_000, 0);
    expect(t.get('s', 999)).toBe('a');
    t.hold('s', 'a', 1_000, 999);
    expect(t.get('s', 1_998)).toBe('a');
    expect(t.get('s', 1_999)).toBeUndefined();
    expect(t.size).toBe(0);
  });
});

const parents = (...names: string[]) =>
  names.map((n, i) => ({
    name: n,
    url: `http://127.0.9.${i + 1}:3128`,
    location: { country: i % 2 === 0 ? 'de' : 'US', region: `r${i}` },
    provider: i < 2 ? 'hetzner' : 'aws',
  }));

describe('picking a parent', () => {
  it('keeps a user-name session on its parent, one per user, apart from other kinds', () => {
    const set = new ParentSet({ upstreams: parents('a', 'b', 'c') });
    const s = (user: string, session: string) =>
      steerOf<Parent>(user, { session }, undefined, undefined);
    const first = set.pick(s('u1', 'x'), new Set());
    for (let i = 0; i < 20; i++) expect(set.pick(s('u1', 'x'), new Set())).toBe(first);
    const others = new Set(
      Array.from({ length: 9 }, (_, i) => set.pick(s('u1', `o${i}`), new Set())?.name),
    );
    expect(others.size).toBe(3);
  });

  it('moves a session whose parent left, says from where, and keeps it on the new one', () => {
    const set = new ParentSet({ upstreams: parents('a', 'b', 'c') });
    const steer = () => steerOf<Parent>('u', { session: 'x' }, undefined, undefined);
    const first = set.pick(steer(), new Set());
    set.set(parents('a', 'b', 'c').filter((p) => p.name !== first?.name));
    const moved = steer();
    const next = set.pick(moved, new Set());
    expect(next?.name).not.toBe(first?.name);
    expect(moved.movedFrom).toBe(first?.name);
    const again = steer();
    expect(set.pick(again, new Set())).toBe(next);
    expect(again.movedFrom).toBeUndefined();
  });

  it('rotates per request on a connection, and keeps one parent per connection by default', () => {
    const set = new ParentSet({ upstreams: parents('a', 'b', 'c') });
    const pin: ConnectionPin<Parent> = { parent: undefined };
    const seen: string[] = [];
    for (let i = 0; i < 12; i++) {
      seen.push(
        set.pick(steerOf<Parent>('u', { rotate: 'request' }, undefined, pin), new Set())?.name ??
          '',
      );
    }
    for (let i = 1; i < seen.length; i++) expect(seen[i]).not.toBe(seen[i - 1]);
    const kept: ConnectionPin<Parent> = { parent: undefined };
    const names = new Set(
      Array.from(
        { length: 12 },
        () => set.pick(steerOf<Parent>('u', {}, undefined, kept), new Set())?.name,
      ),
    );
    expect(names.size).toBe(1);
  });

  it('chooses by country, region and provider, and names a filter nothing matches', () => {
    const set = new ParentSet({ upstreams: parents('a', 'b', 'c', 'd') });
    const pick = (p: UserParams) =>
      set.pick(steerOf<Parent>('u', p, undefined, undefined), new Set())?.name;
    for (let i = 0; i < 6; i++) expect(['b', 'd']).toContain(pick({ country: 'US' }));
    expect(pick({ region: 'r2' })).toBe('c');
    expect(pick({ country: 'US', provider: 'hetzner' })).toBe('b');
    expect(pick({ country: 'JP' })).toBeUndefined();
    expect(set.unmatched({ country: 'JP', provider: 'aws' })).toBe(
      'no upstream matches country=JP provider=aws',
    );
    expect(set.unmatched({ country: 'US' })).toBeUndefined();
  });

  it('gives a session its default TTL of ten minutes', () => {
    expect(steerOf<Parent>('u', { session: 'x' }, undefined, undefined).ttlMs).toBe(
      DEFAULT_SESSION_TTL_MS,
    );
    expect(DEFAULT_SESSION_TTL_MS).toBe(600_000);
  });
});
