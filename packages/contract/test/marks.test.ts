// Peer: none (pure functions).
import { describe, expect, it } from 'vitest';
import {
  adoptionProblem,
  belongsTo,
  DEFAULT_INSTALLATION,
  formatMark,
  formatMarkTime,
  formatOwnerMark,
  installationProblem,
  MarkKey,
  markedInstances,
  parseMark,
  parseMarkTime,
  parseOwnerMark,
} from '../src/index.js';

describe('marks', () => {
  it('keeps the keys of the Go original so its instances are recognised', () => {
    expect(MarkKey.Managed).toBe('proxy-operator-managed');
    expect(MarkKey.Uid).toBe('proxy-operator-uid');
    expect(MarkKey.CreatedAt).toBe('proxy-operator-created-at');
    expect(MarkKey.Installation).toBe('proxy-operator-installation');
  });

  it('round-trips through key/value pairs', () => {
    const mark = { uid: 'u-1', createdAt: new Date('2026-11-29T10:00:00Z'), installation: 'blue' };
    const kv = formatMark(mark);
    expect(kv).toEqual({
      'proxy-operator-managed': 'true',
      'proxy-operator-uid': 'u-1',
      'proxy-operator-created-at': '2026-11-29T10:00:00Z',
      'proxy-operator-installation': 'blue',
    });
    expect(parseMark(kv)).toEqual(mark);
  });

  it('is absent without the managed key set to "true"', () => {
    expect(parseMark({})).toBeUndefined();
    expect(
      parseMark({ 'proxy-operator-managed': 'yes', 'proxy-operator-uid': 'u' }),
    ).toBeUndefined();
  });

  it('reads a Go-original mark (no installation) as the default installation, empty UID allowed', () => {
    const m = parseMark({ 'proxy-operator-managed': 'true' });
    expect(m).toEqual({ uid: '', createdAt: new Date(0), installation: DEFAULT_INSTALLATION });
    expect(belongsTo(m!)).toBe(true);
    expect(belongsTo(m!, 'blue')).toBe(false);
  });

  it('an unparsable time reads as epoch 0', () => {
    expect(parseMarkTime('yesterday').getTime()).toBe(0);
    expect(parseMarkTime(undefined).getTime()).toBe(0);
    expect(formatMarkTime(new Date('2026-01-02T03:04:05.678Z'))).toBe('2026-01-02T03:04:05Z');
  });

  it.each([
    ['no mark', undefined, 'u', undefined, /no proxy-op ownership mark/],
    ['same uid', { uid: 'u' }, 'u', undefined, undefined],
    ['empty uid', { uid: '' }, 'u', undefined, undefined],
    ['other uid', { uid: 'v' }, 'u', undefined, /UID v, not u/],
    [
      'other installation',
      { uid: 'u', installation: 'blue' },
      'u',
      undefined,
      /installation "blue"/,
    ],
    ['named installation', { uid: 'u', installation: 'blue' }, 'u', 'blue', undefined],
  ] as const)('adoption: %s', (_, partial, uid, installation, want) => {
    const mark =
      partial === undefined
        ? undefined
        : {
            uid: partial.uid,
            createdAt: new Date(0),
            installation: 'installation' in partial ? partial.installation : DEFAULT_INSTALLATION,
          };
    const problem = adoptionProblem(mark, { uid, installation });
    if (want === undefined) expect(problem).toBeUndefined();
    else expect(problem).toMatch(want);
  });

  it('validates installation ids as DNS labels', () => {
    expect(installationProblem('default')).toBeUndefined();
    expect(installationProblem('team-a1')).toBeUndefined();
    expect(installationProblem('Team')).toMatch(/lowercase DNS label/);
    expect(installationProblem('-a')).toMatch(/lowercase DNS label/);
    expect(installationProblem('a'.repeat(64))).toMatch(/at most 63/);
  });
});

describe('markedInstances', () => {
  const at = new Date('2026-12-01T10:00:00Z');
  const mark = (uid: string, installation = DEFAULT_INSTALLATION) => ({
    uid,
    createdAt: at,
    installation,
  });

  it("keeps the installation's marked entries in order, with what each carries", () => {
    const listed = markedInstances('default', [
      { id: 'a', mark: mark('u1'), state: 'Preempted', location: { region: 'r1', country: 'DE' } },
      { id: 'b', mark: undefined, state: 'Running' },
      { id: 'c', mark: mark('u2', 'other') },
      { id: 'd', mark: mark('') },
    ]);
    expect(listed).toEqual([
      {
        id: 'a',
        uid: 'u1',
        createdAt: at,
        installation: 'default',
        state: 'Preempted',
        location: { region: 'r1', country: 'DE' },
      },
      { id: 'd', uid: '', createdAt: at, installation: 'default' },
    ]);
    expect(Object.keys(listed[1] ?? {})).not.toContain('state');
  });
});

describe('formatOwnerMark and parseOwnerMark', () => {
  it("write the mark but its time, and read it back with the backend's own time", () => {
    const kv = formatOwnerMark({ uid: 'u-1', installation: 'site-1' });
    expect(kv).toEqual({
      [MarkKey.Managed]: 'true',
      [MarkKey.Uid]: 'u-1',
      [MarkKey.Installation]: 'site-1',
    });
    expect(parseOwnerMark(kv, '2026-05-01T09:12:44.123-07:00')).toEqual({
      uid: 'u-1',
      installation: 'site-1',
      createdAt: new Date('2026-05-01T16:12:44.123Z'),
    });
    expect(parseOwnerMark(kv, undefined)?.createdAt).toEqual(new Date(0));
    expect(parseOwnerMark(kv, 'yesterday')?.createdAt).toEqual(new Date(0));
    const { [MarkKey.Installation]: _gone, ...old } = kv;
    expect(parseOwnerMark(old, undefined)?.installation).toBe(DEFAULT_INSTALLATION);
    expect(parseOwnerMark({ ...kv, [MarkKey.Managed]: 'false' }, undefined)).toBeUndefined();
  });
});
