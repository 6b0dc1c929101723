// Peer: the built package, run from a child Node process as a user would; none for the profile
// table, which is read from the README and held to the exported profile.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PROFILE_AXES } from '@proxy-op/contract';
import { describeReadme } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { profile } from '../src/module.js';

const dir = fileURLToPath(new URL('..', import.meta.url));
describeReadme(vitest, dir);

/** The cells of the README's profile table (`| axis | ... |`), by axis. */
function profileRows(readme: string): Map<string, string> {
  const lines = readme.split('\n');
  const start = lines.findIndex((l) => l.startsWith('| axis |'));
  const rows = new Map<string, string>();
  for (const line of start < 0 ? [] : lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const [, axis = '', cell = ''] = line.split('|').map((c) => c.trim());
    rows.set(axis, cell);
  }
  return rows;
}

vitest.describe('README profile table', () => {
  vitest.it('has a row for every axis, starting with the exported choice', () => {
    const rows = profileRows(readFileSync(`${dir}/README.md`, 'utf8'));
    for (const axis of PROFILE_AXES) {
      const choice: unknown = profile[axis];
      vitest.expect(choice, `profile.${axis} is declared`).toBeDefined();
      const start = Array.isArray(choice)
        ? choice.length === 0
          ? 'none'
          : `\`${choice.join('`, `')}\``
        : `\`${String(choice)}\``;
      vitest.expect(rows.get(axis)?.slice(0, start.length), `the row of ${axis}`).toBe(start);
    }
  });
});
