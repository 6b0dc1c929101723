// Peer: a real worker thread, and a child Node process for the exit (no double).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashPassword } from '@proxy-op/htpasswd';
import { describe, expect, it } from 'vitest';
import { hashOffThread } from '../src/credentials/hashing.js';

describe('hashing on the worker thread', () => {
  it('makes the same lines as hashing here, several at once', async () => {
    const jobs = Array.from({ length: 8 }, (_, i) => ({
      password: `pw-${i}`,
      salt: `salt${i}salt${i}`,
      rounds: 1000 + i,
    }));
    const off = await Promise.all(jobs.map((j) => hashOffThread(j.password, j.salt, j.rounds)));
    expect(off).toEqual(
      jobs.map((j) => hashPassword(j.password, { salt: j.salt, rounds: j.rounds })),
    );
  });

  it('keeps no process alive once the hashes it was asked for are made', () => {
    const module = new URL('../src/credentials/hashing.ts', import.meta.url).href;
    const dir = mkdtempSync(join(tmpdir(), 'proxy-op-hashing-'));
    const script = join(dir, 'hash.mjs');
    writeFileSync(
      script,
      `const { hashOffThread } = await import(${JSON.stringify(module)});
       process.stdout.write((await hashOffThread('pw', 'saltsalt', 1000)).slice(0, 3));\n`,
    );
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 20_000 });
    rmSync(dir, { recursive: true, force: true });
    expect(r.error).toBeUndefined();
    expect(r.stdout).toBe('$6$');
    expect(r.status).toBe(0);
  });
});
