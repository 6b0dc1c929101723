// Peer: blkid from util-linux (real prober, run as a child process on volumes in a temp dir).
import { describeWithPeers } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSeedISO } from '../src/index.js';
import { allVolumes } from './support/cases.js';
import { run, tempDir, writeIso } from './support/exec.js';

const volumes = allVolumes();

function fields(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1).replace(/\\ /g, ' ');
  }
  return out;
}

describeWithPeers({ describe, it }, 'blkid identifies every volume', ['blkid'], () => {
  let dir: string;
  let remove: () => Promise<void>;
  beforeAll(async () => {
    ({ dir, remove } = await tempDir('nocloud-blkid-'));
  });
  afterAll(() => remove());

  volumes.forEach((v, i) => {
    it(v.title, async () => {
      const file = await writeIso(dir, `v${i}.iso`, v.iso);
      // The low-level probe (what udev runs) and the cached lookup cloud-init's
      // device search goes through.
      for (const args of [
        ['-p', '-o', 'export', file],
        ['-o', 'export', file],
      ]) {
        const f = fields((await run('blkid', args)).stdout.toString());
        expect(f.TYPE, args.join(' ')).toBe('iso9660');
        expect(f.LABEL, args.join(' ')).toBe(v.label);
        expect(f.BLOCK_SIZE, args.join(' ')).toBe('2048');
      }
    });
  });

  it('finds the seed by LABEL=cidata, as cloud-init searches', async () => {
    const file = await writeIso(dir, 'seed.iso', buildSeedISO({ instanceId: 'a', userData: '' }));
    const { stdout } = await run('blkid', ['-p', '-o', 'export', '-t', 'LABEL=cidata', file]);
    expect(fields(stdout.toString())).toMatchObject({
      TYPE: 'iso9660',
      LABEL: 'cidata',
      USAGE: 'filesystem',
      VERSION: 'Joliet Extension',
      UUID: '1970-01-01-00-00-00-00',
    });
  });

  it('records an injected date as the volume UUID', async () => {
    const date = new Date('2026-11-29T10:20:30.400Z');
    const file = await writeIso(
      dir,
      'dated.iso',
      buildSeedISO({ instanceId: 'a', userData: '', date }),
    );
    const { stdout } = await run('blkid', ['-p', '-o', 'export', file]);
    expect(fields(stdout.toString()).UUID).toBe('2026-11-29-10-20-30-40');
  });
});
