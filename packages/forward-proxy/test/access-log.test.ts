// Peer: the real file system, in a temp folder: the access log's gathered writes.
import { mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AccessLogEntry, FLUSH_BYTES, openAccessLog } from '../src/access-log.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'provider-local-log-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const entry = (n: number): AccessLogEntry => ({
  time: new Date(0).toISOString(),
  client: '127.0.0.1',
  method: 'GET',
  target: `http://127.0.0.1/${n}`,
  status: 200,
  bytesIn: 0,
  bytesOut: 2,
  durationMs: 1,
});

const lines = async (file: string) =>
  (await readFile(file, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as AccessLogEntry).target);

describe('the access log', () => {
  it('writes gathered lines within a moment, without waiting for close', async () => {
    const file = join(dir, 'a.log');
    const log = openAccessLog(file);
    await log.ready;
    log.write(entry(1));
    log.write(entry(2));
    const deadline = Date.now() + 30_000; // a safety net; they come within 100 ms
    while ((await lines(file)).length < 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(await lines(file)).toEqual(['http://127.0.0.1/1', 'http://127.0.0.1/2']);
    await log.close();
  });

  it('writes at once when the gathered lines reach the flush size, and everything on close', async () => {
    const file = join(dir, 'b.log');
    const log = openAccessLog(file);
    await log.ready;
    const perLine = JSON.stringify(entry(1000)).length + 1;
    const n = Math.ceil(FLUSH_BYTES / perLine) + 5;
    for (let i = 0; i < n; i++) log.write(entry(1000 + i));
    await log.close();
    const got = await lines(file);
    expect(got).toHaveLength(n);
    expect(got[n - 1]).toBe(`http://127.0.0.1/${1000 + n - 1}`);
  });

  it('keeps the order of the lines across many buffers, and writes a line longer than one', async () => {
    const file = join(dir, 'c.log');
    const log = openAccessLog(file);
    await log.ready;
    const perLine = JSON.stringify(entry(10_000)).length + 1;
    const n = Math.ceil((5 * FLUSH_BYTES) / perLine);
    const long = { ...entry(-1), target: `http://127.0.0.1/${'x'.repeat(FLUSH_BYTES + 10)}` };
    for (let i = 0; i < n; i++) {
      log.write(entry(10_000 + i));
      if (i === Math.floor(n / 2)) log.write(long);
    }
    await log.close();
    const got = await lines(file);
    const want = Array.from({ length: n }, (_, i) => `http://127.0.0.1/${10_000 + i}`);
    want.splice(Math.floor(n / 2) + 1, 0, long.target);
    expect(got).toEqual(want);
  });

  it('a file it cannot open: ready and close still resolve, writes are ignored', async () => {
    const log = openAccessLog(join(dir, 'no-such-folder', 'd.log'));
    await log.ready;
    log.write(entry(1));
    await log.close();
    await expect(readFile(join(dir, 'no-such-folder', 'd.log'))).rejects.toThrow(/ENOENT/);
  });

  it('ignores lines written after close', async () => {
    const file = join(dir, 'e.log');
    const log = openAccessLog(file);
    log.write(entry(1));
    await log.close();
    log.write(entry(2));
    await new Promise((r) => setTimeout(r, 150));
    expect(await lines(file)).toEqual(['http://127.0.0.1/1']);
  });
});

describe('the access log file', () => {
  it('is made 0600, and a link planted in its place is never written through', async () => {
    const file = join(dir, 'access.log');
    const log = openAccessLog(file);
    await log.ready;
    log.write(entry(1));
    await log.close();
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const victim = join(dir, 'victim');
    await writeFile(victim, 'untouched\n');
    const planted = join(dir, 'planted.log');
    await symlink(victim, planted);
    const refused = openAccessLog(planted);
    await refused.ready;
    refused.write(entry(2));
    await refused.close();
    expect(await readFile(victim, 'utf8')).toBe('untouched\n');
  });
});
