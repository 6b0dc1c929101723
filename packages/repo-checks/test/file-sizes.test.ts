// Peer: the repo's own files. One job per file: no source file over 500 lines, in every package,
// except a file that holds one table or one codec and nothing else.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** The files allowed past the limit, each with what it holds. */
const ONE_TABLE_OR_CODEC: Readonly<Record<string, string>> = {
  'packages/libvirt-rpc/src/protocol.ts': "one table: libvirt's remote protocol procedures",
  'packages/nocloud/src/iso9660.ts': 'one codec: ISO 9660 with Joliet and Rock Ridge',
};

/** The most lines a source file may have. */
const LIMIT = 500;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (/\.(ts|mts|js|mjs)$/.test(entry) && !entry.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

describe('file sizes', () => {
  const files = readdirSync(join(root, 'packages'))
    .map((p) => join(root, 'packages', p, 'src'))
    .filter((d) => {
      try {
        return statSync(d).isDirectory();
      } catch {
        return false;
      }
    })
    .flatMap(sources)
    .map((f) => relative(root, f));

  it('no file in packages/*/src is over 500 lines, but the tables and codecs named here', () => {
    expect(files.length).toBeGreaterThan(100);
    const over = files
      .map((f) => ({ f, lines: readFileSync(join(root, f), 'utf8').split('\n').length - 1 }))
      .filter(({ f, lines }) => lines > LIMIT && ONE_TABLE_OR_CODEC[f] === undefined)
      .map(({ f, lines }) => `${f}: ${lines} lines (limit ${LIMIT})`);
    expect(over).toEqual([]);
  });

  it('names only exceptions that exist and are over the limit', () => {
    for (const f of Object.keys(ONE_TABLE_OR_CODEC)) {
      expect(files, f).toContain(f);
      const lines = readFileSync(join(root, f), 'utf8').split('\n').length - 1;
      expect(lines, `${f} no longer needs its exception`).toBeGreaterThan(LIMIT);
    }
  });
});
