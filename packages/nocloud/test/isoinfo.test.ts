// Peer: isoinfo from genisoimage (real reader, run as a child process on volumes in a temp dir).
import { describeWithPeers } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allVolumes } from './support/cases.js';
import { run, tempDir, writeIso } from './support/exec.js';

const volumes = allVolumes();

describeWithPeers({ describe, it }, 'isoinfo reads every volume', ['isoinfo'], () => {
  let dir: string;
  let remove: () => Promise<void>;
  beforeAll(async () => {
    ({ dir, remove } = await tempDir('nocloud-isoinfo-'));
  });
  afterAll(() => remove());

  volumes.forEach((v, i) => {
    it(v.title, async () => {
      const file = await writeIso(dir, `v${i}.iso`, v.iso);

      const info = (await run('isoinfo', ['-d', '-i', file])).stdout.toString();
      expect(info).toContain(`Volume id: ${v.label}\n`);
      expect(info).toContain('Logical block size is: 2048\n');
      expect(info).toContain(`Volume size is: ${v.iso.byteLength / 2048}\n`);
      expect(info).toContain('Joliet with UCS level 3 found');
      expect(info).toContain('Rock Ridge signatures version 1 found');

      const expected = [...v.files.entries()]
        .map(([name, data]) => `${name} ${data.byteLength}`)
        .sort();
      expect(listing((await run('isoinfo', ['-l', '-R', '-i', file])).stdout.toString())).toEqual(
        expected,
      );
      expect(listing((await run('isoinfo', ['-l', '-J', '-i', file])).stdout.toString())).toEqual(
        expected,
      );

      for (const [name, data] of v.files) {
        for (const mode of ['-R', '-J']) {
          const { stdout } = await run('isoinfo', [mode, '-i', file, '-x', `/${name}`]);
          expect(stdout.equals(data), `${mode} ${name}`).toBe(true);
        }
      }
    });
  });
});

/** "name size" for each file line of `isoinfo -l`, sorted. */
function listing(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    // -r--r--r--   1    0    0     26 Jan  1 1970 [     28 00]  user-data
    const m = /^-\S+\s+\d+\s+\d+\s+\d+\s+(\d+)\s.*\]\s+(\S+)\s*$/.exec(line);
    if (m) out.push(`${m[2]} ${m[1]}`);
  }
  return out.sort();
}
