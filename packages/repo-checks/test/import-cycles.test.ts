// Peer: the repo's own files, and a fixture tree this file writes to a temp dir. No import cycle
// inside a package: the relative imports among the files of each package's `src/` (type-only
// imports, `export ... from` and `import()` included) form no cycle, but the ones named here
// while they are being taken apart.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importGraph, importSpecifiers, packageCycles } from '../src/import-cycles.ts';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * The cycles that still exist, each with what it is, while they are being taken apart. Each goes
 * when its shared piece moves to the room that owns it; the last test fails as soon as one is
 * gone, so its line goes with it.
 */
const CYCLES_BEING_REMOVED: Readonly<Record<string, string>> = {};

/** One failure line for each cycle of `found` that `allowed` does not name. */
function cycleProblems(found: readonly string[], allowed: Readonly<Record<string, string>>) {
  return found.filter((c) => allowed[c] === undefined).map((c) => `import cycle in ${c}`);
}

/** The names in `allowed` that are not a cycle of `found` (any more). */
function staleAllowances(found: readonly string[], allowed: Readonly<Record<string, string>>) {
  return Object.keys(allowed).filter((c) => !found.includes(c));
}

describe('the import cycle check, on a fixture tree', () => {
  let dir = '';
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'import-cycles-'));
    // alpha: a three-file cycle made of a type-only import, a re-export and an import() type;
    // a file that imports itself; a file whose comments, strings, templates and regular
    // expressions only mention imports, with one real import over several lines.
    write('alpha/src/a.ts', "import type { C } from './b.js';\nexport type A = C;\n");
    write('alpha/src/b.ts', "export { type C } from './sub/c.js';\n");
    write('alpha/src/sub/c.ts', "export type C = import('../a.js').A | number;\n");
    write('alpha/src/self.ts', "import './self.js';\nexport const self = 1;\n");
    write(
      'alpha/src/quiet.ts',
      [
        "// import type { A } from './a.js';",
        "/* export * from './b.js'; */",
        'import {',
        '  d,',
        "} from './d.js';",
        'const s = "import x from \'./a.js\'";',
        `const t = \`import y from './b.js' \${"from './a.js'"} \${\`import('./self.js')\`}\`;`,
        "const r = /from '\\.\\/a\\.js'/.test(s) ? d / 2 : d / 3;",
        "export const quiet = [s, t, r, Array.from('./a.js')];",
        '',
      ].join('\n'),
    );
    write('alpha/src/d.ts', 'export const d = 4;\n');
    // beta: two files importing each other, one through a multi-line import.
    write('beta/src/x.ts', "import {\n  y,\n} from './y.js';\nexport const x = () => y;\n");
    write('beta/src/y.ts', "import { x } from './x.js';\nexport const y = () => x;\n");
    // gamma has no src/; delta's imports form no cycle.
    write('gamma/README.md', '# gamma\n');
    write('delta/src/index.ts', "export { e } from './e.js';\n");
    write('delta/src/e.ts', "import { f } from '../../alpha/src/a.js';\nexport const e = f;\n");
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('fails naming the files of every cycle, a file importing itself among them', () => {
    const found = packageCycles(dir);
    expect(found).toEqual(['alpha: a.ts b.ts sub/c.ts', 'alpha: self.ts', 'beta: x.ts y.ts']);
    expect(cycleProblems(found, {})).toEqual([
      'import cycle in alpha: a.ts b.ts sub/c.ts',
      'import cycle in alpha: self.ts',
      'import cycle in beta: x.ts y.ts',
    ]);
  });

  it('passes a cycle its allowance names, and reports an allowance no cycle matches', () => {
    const found = packageCycles(dir);
    const allowed = { 'beta: x.ts y.ts': 'kept', 'beta: x.ts': 'gone' };
    expect(cycleProblems(found, allowed)).toEqual([
      'import cycle in alpha: a.ts b.ts sub/c.ts',
      'import cycle in alpha: self.ts',
    ]);
    expect(staleAllowances(found, allowed)).toEqual(['beta: x.ts']);
  });

  it('reads imports only from code, and only relative ones inside src/ make edges', () => {
    const alpha = importGraph(join(dir, 'alpha/src'));
    expect([...(alpha.get('quiet.ts') ?? [])]).toEqual(['d.ts']);
    expect([...(alpha.get('sub/c.ts') ?? [])]).toEqual(['a.ts']);
    expect([...(importGraph(join(dir, 'delta/src')).get('e.ts') ?? [])]).toEqual([]);
    expect(
      importSpecifiers(
        "import a from 'pkg';\nexport * as b from \"./b.js\";\nconst c = await import(\n  './c.js'\n);",
      ),
    ).toEqual(['pkg', './b.js', './c.js']);
  });
});

describe('import cycles in packages/*/src', () => {
  const found = packageCycles(join(root, 'packages'));

  it('reads the graph: the contract index imports its rooms', () => {
    expect(importGraph(join(root, 'packages/contract/src')).get('index.ts')?.size).toBeGreaterThan(
      10,
    );
  });

  it('no package has an import cycle, but those named in CYCLES_BEING_REMOVED', () => {
    expect(cycleProblems(found, CYCLES_BEING_REMOVED)).toEqual([]);
  });

  it('CYCLES_BEING_REMOVED names only cycles that still exist', () => {
    expect(staleAllowances(found, CYCLES_BEING_REMOVED), 'gone: remove them from the list').toEqual(
      [],
    );
  });
});
