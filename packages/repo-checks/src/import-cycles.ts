// Import cycles inside a package: the graph of relative imports among the files of each package's
// `src/` (static imports, type-only ones included, `export ... from`, side-effect imports and
// `import()` calls and types) and its strongly connected components of more than one file, plus
// any file that imports itself. A cycle shows two files that are one job or a shared piece in the
// wrong room.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';

/** The source files the graph is built from (declaration files aside). */
const SOURCE = /\.(ts|tsx|mts|cts)$/;

/** Keywords after which a `/` starts a regular expression, not a division. */
const BEFORE_REGEX = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

/**
 * `source` with every comment blanked and the contents of every string, template text and
 * regular expression replaced by `_`, each character in its place: what is left is code, so an
 * import found in it is one, and its specifier is read from `source` at the same offsets.
 */
export function maskSource(source: string): string {
  const out = source.split('');
  const blank = (from: number, to: number, fill: string) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = fill;
  };
  // The brace depth at which each open template's `${` was entered.
  const templates: number[] = [];
  let depth = 0;
  // The last significant character or word of code, to tell a regex from a division.
  let last = '';
  let i = 0;
  const n = source.length;

  // Scans template text from `i` (just past a backtick or a `}` closing `${`), up to the closing
  // backtick or the next `${`.
  const templateText = () => {
    const start = i;
    while (i < n) {
      const c = source[i];
      if (c === '\\') i += 2;
      else if (c === '`') {
        blank(start, i, '_');
        i++;
        last = '`';
        return;
      } else if (c === '$' && source[i + 1] === '{') {
        blank(start, i, '_');
        templates.push(depth);
        depth++;
        i += 2;
        last = '{';
        return;
      } else i++;
    }
    blank(start, n, '_');
  };

  while (i < n) {
    const c = source[i] as string;
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i);
      const stop = end === -1 ? n : end;
      blank(i, stop, ' ');
      i = stop;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? n : end + 2;
      blank(i, stop, ' ');
      i = stop;
    } else if (c === "'" || c === '"') {
      const start = ++i;
      while (i < n && source[i] !== c && source[i] !== '\n') i += source[i] === '\\' ? 2 : 1;
      blank(start, Math.min(i, n), '_');
      i++;
      last = c;
    } else if (c === '`') {
      i++;
      templateText();
    } else if (c === '/') {
      const regex = last === '' || BEFORE_REGEX.has(last) || /^[(,=:[!&|?{};+\-*%<>~^]$/.test(last);
      if (!regex) {
        i++;
        last = '/';
        continue;
      }
      const start = ++i;
      let inClass = false;
      while (i < n && source[i] !== '\n') {
        const r = source[i];
        if (r === '/' && !inClass) break;
        if (r === '[') inClass = true;
        else if (r === ']') inClass = false;
        i += r === '\\' ? 2 : 1;
      }
      blank(start, Math.min(i, n), '_');
      i++;
      last = 'regex';
    } else if (c === '{') {
      depth++;
      i++;
      last = c;
    } else if (c === '}') {
      depth--;
      i++;
      if (templates.length > 0 && templates[templates.length - 1] === depth) {
        templates.pop();
        templateText();
      } else last = c;
    } else if (/[\w$]/.test(c)) {
      const start = i;
      while (i < n && /[\w$]/.test(source[i] as string)) i++;
      last = source.slice(start, i);
    } else {
      if (!/\s/.test(c)) last = c;
      i++;
    }
  }
  return out.join('');
}

/**
 * The specifiers a module imports or re-exports from: `import ... from`, `import type`,
 * `export ... from`, `import 'x'` and `import('x')` (a dynamic import or an import type). Comments,
 * strings and templates that only mention an import are not read.
 */
export function importSpecifiers(source: string): string[] {
  const code = maskSource(source);
  const found: string[] = [];
  // `from` or `import` right before a string, and `import(` before one, are only valid in an
  // import or export: the string is the module specifier.
  const re = /(?<![\w$.])(?:from\s*|import\s*(?:\(\s*)?)(['"])(_*)\1/g;
  for (const m of code.matchAll(re)) {
    const at = (m.index ?? 0) + m[0].length - 1 - (m[2] ?? '').length;
    found.push(source.slice(at, at + (m[2] ?? '').length));
  }
  return found;
}

/** The source files under `dir`, recursively, as absolute paths. */
function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (SOURCE.test(entry) && !/\.d\.[mc]?ts$/.test(entry)) out.push(path);
  }
  return out;
}

/** The file among `files` a relative specifier names from `from`, as TypeScript resolves it. */
function resolveSpecifier(
  from: string,
  spec: string,
  files: ReadonlySet<string>,
): string | undefined {
  const p = normalize(join(dirname(from), spec));
  const candidates = [
    p,
    p.replace(/\.js$/, '.ts'),
    p.replace(/\.js$/, '.tsx'),
    p.replace(/\.mjs$/, '.mts'),
    p.replace(/\.cjs$/, '.cts'),
    `${p}.ts`,
    `${p}.tsx`,
    join(p, 'index.ts'),
  ];
  return candidates.find((c) => files.has(c));
}

/**
 * The graph of relative imports among the source files under `srcDir`: each file (relative to
 * `srcDir`, with `/`) and the files it imports. Imports of other packages and of files outside
 * `srcDir` are left out.
 */
export function importGraph(srcDir: string): Map<string, Set<string>> {
  const files = sourceFiles(srcDir);
  const set = new Set(files);
  const name = (f: string) => relative(srcDir, f).split(sep).join('/');
  const graph = new Map<string, Set<string>>();
  for (const f of files) {
    const edges = new Set<string>();
    for (const spec of importSpecifiers(readFileSync(f, 'utf8'))) {
      if (!spec.startsWith('./') && !spec.startsWith('../')) continue;
      const target = resolveSpecifier(f, spec, set);
      if (target !== undefined) edges.add(name(target));
    }
    graph.set(name(f), edges);
  }
  return graph;
}

/**
 * The cycles of a graph: each strongly connected component of more than one file, and each file
 * that imports itself, as sorted file lists, in sorted order (Tarjan's algorithm).
 */
export function cyclesOf(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)?.has(v)) found.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found.sort((a, b) => a.join(' ').localeCompare(b.join(' ')));
}

/**
 * Every cycle in the packages under `packagesDir`, one line each in the form
 * `<package>: <file> <file> ...` (files relative to the package's `src/`), in package order.
 */
export function packageCycles(packagesDir: string): string[] {
  const lines: string[] = [];
  for (const pkg of readdirSync(packagesDir).sort()) {
    const src = join(packagesDir, pkg, 'src');
    if (!existsSync(src) || !statSync(src).isDirectory()) continue;
    for (const cycle of cyclesOf(importGraph(src))) lines.push(`${pkg}: ${cycle.join(' ')}`);
  }
  return lines;
}
