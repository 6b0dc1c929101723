// Peer: the built package, run from a child Node process as a user would; the API tables
// read against each entry's index.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describeReadme } from '@proxy-op/testkit';
import * as vitest from 'vitest';

describeReadme(vitest, fileURLToPath(new URL('..', import.meta.url)));

const read = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');
const readme = read('../README.md');

/** The entries and the source of the names each exports. */
const ENTRIES = {
  '@proxy-op/providertest': '../src/index.ts',
  '@proxy-op/providertest/reference': '../src/reference/index.ts',
} as const;

vitest.describe('README API', () => {
  for (const [entry, index] of Object.entries(ENTRIES)) {
    vitest.it(`names every export of ${entry}, and nothing else, under its heading`, () => {
      const names = [...read(index).matchAll(/^export (?:type )?\{([^}]*)\}/gm)].flatMap((m) =>
        (m[1] ?? '').split(',').map((n) => n.replace(/^\s*type\s+/, '').trim()),
      );
      const exported = names.filter((n) => n !== '');
      const from = readme.indexOf(`\n### \`${entry}\`\n`);
      const to = readme.indexOf('\n### ', from + 1);
      const table = readme.slice(from, to === -1 ? undefined : to);
      const firstCells = [...table.matchAll(/^\| (`.+?) \|/gm)].map((m) => m[1] ?? '');
      // A cell names exports as code spans; a call's arguments are left out (`createGate()`).
      const listed = firstCells.flatMap((c) =>
        [...c.matchAll(/`([\w$]+)/g)].map((n) => n[1] ?? ''),
      );
      vitest.expect(from, `a "### \`${entry}\`" table`).toBeGreaterThan(0);
      vitest.expect(exported.filter((n) => !listed.includes(n))).toEqual([]);
      vitest.expect(listed.filter((n) => !exported.includes(n))).toEqual([]);
    });
  }
});
