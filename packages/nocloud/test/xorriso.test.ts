// Peer: xorriso (real reader, run as a child process; extracts into a temp dir).
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describeWithPeers } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allVolumes } from './support/cases.js';
import { run, tempDir, writeIso } from './support/exec.js';

const volumes = allVolumes();
const COMPLAINT = /: (WARNING|SORRY|FAILURE|FATAL|MISHAP|ABORT) :/;

describeWithPeers({ describe, it }, 'xorriso reads every volume', ['xorriso'], () => {
  let dir: string;
  let remove: () => Promise<void>;
  beforeAll(async () => {
    ({ dir, remove } = await tempDir('nocloud-xorriso-'));
  });
  afterAll(() => remove());

  volumes.forEach((v, i) => {
    it(v.title, async () => {
      const file = await writeIso(dir, `v${i}.iso`, v.iso);
      // Rock Ridge tree (xorriso's default), then the Joliet tree.
      for (const tree of ['rock-ridge', 'joliet']) {
        const out = join(dir, `v${i}-${tree}`);
        const { stdout, stderr } = await run('xorriso', [
          '-osirrox',
          'on',
          ...(tree === 'joliet' ? ['-read_fs', 'norock'] : []),
          '-indev',
          file,
          '-pvd_info',
          '-ls',
          '/',
          '--',
          '-extract',
          '/',
          out,
        ]);
        const said = `${stdout.toString()}\n${stderr}`;
        expect(said).not.toMatch(COMPLAINT);
        expect(said).toContain(`Volume Id    : ${v.label}\n`);
        const listed = [...stdout.toString().matchAll(/^'([^'/]+)'$/gm)].map((m) => m[1]);
        expect(listed.sort()).toEqual([...v.files.keys()].sort());
        expect((await readdir(out)).sort()).toEqual([...v.files.keys()].sort());
        for (const [name, data] of v.files) {
          const got = await readFile(join(out, name));
          expect(got.equals(data), `${tree} ${name}`).toBe(true);
          if (tree === 'rock-ridge') {
            // Rock Ridge modes come through: read-only for all.
            expect((await stat(join(out, name))).mode & 0o777).toBe(0o444);
          }
        }
      }
    });
  });
});
