// Peer: none (a README's text against a profile, as data).
import { describe, expect, it } from 'vitest';
import { profileCellStart, profileTableProblems } from '../src/index.js';

const README = [
  '## Profile',
  '',
  '| axis | choice |',
  '|---|---|',
  '| readiness | `immediate` |',
  '| asyncOps | none |',
  '| billing | `{"period":"hour","minimumSeconds":3600}` (per started hour) |',
  '',
  '| axis | something else |',
  '| preemption | `never` |',
].join('\n');

describe('profileTableProblems', () => {
  const axes = ['readiness', 'asyncOps', 'billing'];

  it('is empty when every row starts with the exported choice', () => {
    const profile = {
      readiness: 'immediate',
      asyncOps: [],
      billing: { period: 'hour', minimumSeconds: 3600 },
    };
    expect(profileTableProblems(README, profile, axes)).toEqual([]);
  });

  it('names an undeclared axis, a missing row and a row with another choice', () => {
    expect(
      profileTableProblems(
        README,
        { readiness: 'provisioning-window', billing: 'none', preemption: 'never' },
        [...axes, 'preemption'],
      ),
    ).toEqual([
      'the row of readiness says "`immediate`", which does not start "`provisioning-window`"',
      'profile.asyncOps: not declared (declare it, even where it may be left out)',
      'the row of billing says "`{"period":"hour","minimumSeconds":3600}` (per started hour)", which does not start "`none`"',
      // Only the first table is read.
      'the profile table has no row for preemption',
    ]);
  });

  it('writes a list choice in backticks, and an empty one as none', () => {
    expect(profileCellStart(['task-handle', 'backend-lock'])).toBe('`task-handle`, `backend-lock`');
    expect(profileCellStart([])).toBe('none');
  });
});
