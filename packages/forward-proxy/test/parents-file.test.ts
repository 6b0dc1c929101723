// The parents file followed from the caller's own read: a change made between that read and the
// watch is delivered, and a file that holds what the caller read delivers nothing.
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ParentProxy, readParentsFile, watchParentsFile } from '../src/index.js';

let dir = '';
let stops: Array<() => void> = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'proxy-op-parents-file-'));
});
afterEach(async () => {
  for (const s of stops) s();
  stops = [];
  await rm(dir, { recursive: true, force: true });
});

const list = (...names: string[]) =>
  JSON.stringify({ upstreams: names.map((n) => ({ name: n, url: `http://10.0.0.1:3128/${n}` })) });

async function replace(file: string, text: string): Promise<void> {
  await writeFile(`${file}.tmp`, text);
  await rename(`${file}.tmp`, file);
}

/** The lists `watchParentsFile` delivers within `ms`. */
async function delivered(file: string, current: ParentProxy[] | undefined, ms: number) {
  const got: string[][] = [];
  const warnings: string[] = [];
  stops.push(
    watchParentsFile(
      file,
      (l) => got.push(l.map((p) => p.name)),
      (w) => warnings.push(w),
      current,
    ),
  );
  await new Promise((r) => setTimeout(r, ms));
  return { got, warnings };
}

describe('watchParentsFile from the list the caller read', () => {
  it('delivers a change made between the read and the watch', async () => {
    const file = join(dir, 'upstreams.json');
    await replace(file, list('a'));
    const first = readParentsFile(file);
    await replace(file, list('b'));
    expect((await delivered(file, first, 2_500)).got).toEqual([['b']]);
  });

  it('delivers a file that appeared after the caller found none', async () => {
    const file = join(dir, 'upstreams.json');
    await replace(file, list('a', 'b'));
    expect((await delivered(file, [], 2_500)).got).toEqual([['a', 'b']]);
  });

  it('delivers nothing while the file holds what the caller read, or is rewritten the same', async () => {
    const file = join(dir, 'upstreams.json');
    await replace(file, list('a'));
    const first = readParentsFile(file);
    setTimeout(() => void replace(file, list('a')), 1_200);
    const { got, warnings } = await delivered(file, first, 2_800);
    expect(got).toEqual([]);
    expect(warnings).toEqual([]);
  });
});

describe('readParentsFile', () => {
  it('reads where each upstream is and its provider, and leaves out what is empty or not text', async () => {
    const file = join(dir, 'parents.json');
    await writeFile(
      file,
      JSON.stringify({
        upstreams: [
          {
            name: 'a',
            url: 'http://10.0.0.1:3128',
            location: { country: 'DE', region: 'fsn1', zone: 'fsn1-dc14' },
            provider: 'hetzner',
          },
          {
            name: 'b',
            url: 'http://10.0.0.2:3128',
            location: { country: '', region: 7 },
            provider: '',
          },
          { name: 'c', url: 'http://10.0.0.3:3128', location: { region: 'eu-central-1' } },
        ],
      }),
    );
    expect(readParentsFile(file)).toEqual([
      {
        name: 'a',
        url: 'http://10.0.0.1:3128',
        location: { country: 'DE', region: 'fsn1' },
        provider: 'hetzner',
      },
      { name: 'b', url: 'http://10.0.0.2:3128' },
      { name: 'c', url: 'http://10.0.0.3:3128', location: { region: 'eu-central-1' } },
    ]);
  });
});
