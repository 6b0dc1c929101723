// Peer: the built package, run from a child Node process as a user would; the API table
// read against src/index.ts.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describeReadme } from '@proxy-op/testkit';
import * as vitest from 'vitest';

describeReadme(vitest, fileURLToPath(new URL('..', import.meta.url)));

/** The names `export { ... }` blocks of a source file export, `type` markers dropped. */
function exportedNames(source: string): string[] {
  return [...source.matchAll(/^export (?:type )?\{([^}]*)\}/gm)]
    .flatMap((m) => (m[1] ?? '').split(','))
    .map((name) => name.replace(/^\s*type\s+/, '').trim())
    .filter((name) => name !== '');
}

vitest.describe('README API', () => {
  vitest.it('has a row for every export of src/index.ts, and none for anything else', () => {
    const read = (p: string) => readFileSync(new URL(p, import.meta.url), 'utf8');
    const exported = exportedNames(read('../src/index.ts'));
    const readme = read('../README.md');
    const api = readme.slice(readme.indexOf('\n## API\n'));
    const rows = [...api.matchAll(/^\| (`.+?) \|/gm)].map((m) => m[1] ?? '');
    const listed = rows.flatMap((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((c) => c[1] ?? ''));
    vitest.expect(exported.length).toBeGreaterThan(100);
    vitest.expect(exported.filter((name) => !listed.includes(name))).toEqual([]);
    vitest.expect(listed.filter((name) => !exported.includes(name))).toEqual([]);
  });
});
