// Peer: the local filesystem. The harness kubelet's volume writer, held to the layout and the
// atomicity of the real kubelet's: a `..data` symlink renamed over onto a new version's
// directory, one symlink per key, and a reader that never sees a missing or a mixed file.
import { lstat, mkdtemp, readdir, readFile, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AtomicWriter, DATA_LINK } from './support/atomic-writer.js';

let dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
  dirs = [];
});

async function volume(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'proxy-op-volume-'));
  dirs.push(d);
  return join(d, 'squid-auth');
}

const file = (text: string, mode = 0o440) => ({ data: Buffer.from(text), mode });

describe('the kubelet volume writer', () => {
  it('writes a version directory, ..data pointing at it, and a symlink per key', async () => {
    const dir = await volume();
    const w = new AtomicWriter(dir);
    expect(await w.write({ passwd: file('alice:x\n') }, new Date('2026-12-01T23:10:31Z'))).toBe(
      true,
    );
    const version = await readlink(join(dir, DATA_LINK));
    expect(version).toMatch(/^\.\.2026_12_01_23_10_31\.\w+$/);
    expect(await readlink(join(dir, 'passwd'))).toBe(`${DATA_LINK}/passwd`);
    expect((await lstat(join(dir, 'passwd'))).isSymbolicLink()).toBe(true);
    expect(await readFile(join(dir, 'passwd'), 'utf8')).toBe('alice:x\n');
    expect((await stat(join(dir, version, 'passwd'))).mode & 0o777).toBe(0o440);
    expect((await readdir(dir)).sort()).toEqual([DATA_LINK, version, 'passwd'].sort());
  });

  it('writes nothing when the payload is what it holds', async () => {
    const dir = await volume();
    const w = new AtomicWriter(dir);
    await w.write({ passwd: file('alice:x\n') });
    const version = await readlink(join(dir, DATA_LINK));
    expect(await w.write({ passwd: file('alice:x\n') })).toBe(false);
    expect(await readlink(join(dir, DATA_LINK))).toBe(version);
  });

  it('swaps in a new version, removes the old one and keys no longer in the payload', async () => {
    const dir = await volume();
    const w = new AtomicWriter(dir);
    await w.write({ passwd: file('alice:x\n'), extra: file('e') });
    const first = await readlink(join(dir, DATA_LINK));
    expect(await w.write({ passwd: file('alice:x\nbob:y\n') })).toBe(true);
    const second = await readlink(join(dir, DATA_LINK));
    expect(second).not.toBe(first);
    expect(await readFile(join(dir, 'passwd'), 'utf8')).toBe('alice:x\nbob:y\n');
    expect((await readdir(dir)).sort()).toEqual([DATA_LINK, second, 'passwd'].sort());
  });

  it('never shows a reader a missing, empty or mixed file while versions are swapped', async () => {
    const dir = await volume();
    const w = new AtomicWriter(dir);
    const versions = Array.from({ length: 40 }, (_, i) => `user${i}:${'h'.repeat(4000)}\n`);
    await w.write({ passwd: file(versions[0]!) });
    let writing = true;
    const seen = new Set<string>();
    const problems: string[] = [];
    const reader = (async () => {
      while (writing) {
        try {
          const text = await readFile(join(dir, 'passwd'), 'utf8');
          if (!versions.includes(text)) problems.push(`a mixed file of ${text.length} bytes`);
          seen.add(text);
        } catch (err) {
          problems.push((err as NodeJS.ErrnoException).code ?? String(err));
        }
      }
    })();
    for (const v of versions.slice(1)) await w.write({ passwd: file(v) });
    writing = false;
    await reader;
    expect(problems).toEqual([]);
    expect(seen.size).toBeGreaterThan(1);
  });

  it('refuses a key that is not a file name', async () => {
    const w = new AtomicWriter(await volume());
    await expect(w.write({ '../escape': file('x') })).rejects.toThrow(/not a file name/);
    await expect(w.write({ '..data': file('x') })).rejects.toThrow(/not a file name/);
  });
});
