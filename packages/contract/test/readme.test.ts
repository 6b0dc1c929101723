// Peer: the built package, run from a child Node process as a user would; the API table
// read against src/index.ts and src/files.ts.
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

/** The names a source file declares with `export function`, `class`, `type`, `interface` or `const`. */
function declaredNames(source: string): string[] {
  return [
    ...source.matchAll(/^export (?:async )?(?:function|class|type|interface|const) (\w+)/gm),
  ].map((m) => m[1] ?? '');
}

/** The names in the first cell of each row of a README table section. */
function listedNames(section: string): string[] {
  const rows = [...section.matchAll(/^\| (`.+?) \|/gm)].map((m) => m[1] ?? '');
  return rows.flatMap((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((c) => c[1] ?? ''));
}

vitest.describe('README API', () => {
  const read = (p: string) => readFileSync(new URL(p, import.meta.url), 'utf8');
  const readme = read('../README.md');
  const api = readme.slice(readme.indexOf('\n## API\n'), readme.indexOf('\n## API reference\n'));
  const filesAt = api.indexOf('\n### Owned files');

  vitest.it('has a row for every export of src/index.ts, and none for anything else', () => {
    const exported = exportedNames(read('../src/index.ts'));
    const listed = listedNames(api.slice(0, filesAt));
    vitest.expect(exported.length).toBeGreaterThan(100);
    vitest.expect(exported.filter((name) => !listed.includes(name))).toEqual([]);
    vitest.expect(listed.filter((name) => !exported.includes(name))).toEqual([]);
  });

  vitest.it(
    'has a row for every export of src/files.ts under "Owned files", and only those',
    () => {
      const exported = declaredNames(read('../src/files.ts'));
      const listed = listedNames(api.slice(filesAt));
      vitest.expect(filesAt).toBeGreaterThan(0);
      vitest.expect(exported.length).toBeGreaterThan(5);
      vitest.expect([...listed].sort()).toEqual([...exported].sort());
    },
  );
});
