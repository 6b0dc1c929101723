// Peer: cloud-init's own Python modules (its NoCloud datasource and user-data processor), fed seeds that xorriso extracted from our volumes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeWithPeers, which } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCases } from './support/cases.js';
import { run, tempDir, writeIso } from './support/exec.js';

const reader = fileURLToPath(new URL('./fixtures/cloudinit-read.py', import.meta.url));
const cases = buildCases();

interface Seen {
  ok: boolean;
  instanceId: string;
  hostname: string;
  metadata: Record<string, unknown>;
  userData: string;
  vendorData: string;
  networkConfig: unknown;
  vendorParts: { contentType: string; filename: string | null; payload: string }[];
}

/** The Python cloud-init is installed for: the one its launcher names. */
function cloudInitPython(): string {
  const launcher = which('cloud-init');
  const first = launcher ? (readFileSync(launcher, 'utf8').split('\n')[0] ?? '') : '';
  return /^#!\s*(\S*python\S*)/.exec(first)?.[1] ?? 'python3';
}

const b64 = (bytes: Uint8Array | undefined) =>
  Buffer.from(bytes ?? new Uint8Array(0)).toString('base64');

describeWithPeers({ describe, it }, 'cloud-init reads our seeds', ['cloud-init', 'xorriso'], () => {
  let dir: string;
  let remove: () => Promise<void>;
  let seen: Seen[];

  beforeAll(async () => {
    ({ dir, remove } = await tempDir('nocloud-cloudinit-'));
    const seeds: string[] = [];
    for (const [i, c] of cases.entries()) {
      const file = await writeIso(dir, `seed${i}.iso`, c.iso);
      const out = join(dir, `seed${i}`);
      await run('xorriso', ['-osirrox', 'on', '-indev', file, '-extract', '/', out]);
      seeds.push(out);
    }
    const { stdout } = await run(cloudInitPython(), [reader], JSON.stringify(seeds));
    seen = JSON.parse(stdout.toString()) as Seen[];
  }, 60_000);
  afterAll(() => remove());

  cases.forEach((c, i) => {
    it(c.title, () => {
      const s = seen[i]!;
      const host = c.options.hostname ?? c.options.instanceId;
      expect(s.ok).toBe(true);
      expect(s.instanceId).toBe(c.options.instanceId);
      expect(s.hostname).toBe(host.split('.')[0]);
      expect(s.metadata).toMatchObject({
        'instance-id': c.options.instanceId,
        'local-hostname': host,
      });
      expect(s.userData).toBe(b64(c.files.get('user-data')));
      expect(s.vendorData).toBe(b64(c.files.get('vendor-data')));
      if (c.files.has('network-config')) expect(s.networkConfig).toMatchObject({ version: 2 });
      else expect(s.networkConfig).toBeNull();
      expect(s.vendorParts.map((p) => p.contentType)).toEqual(
        c.vendorParts.map((p) => p.contentType),
      );
      c.vendorParts.forEach((want, j) => {
        const got = s.vendorParts[j]!;
        expect(Buffer.from(got.payload, 'base64').equals(want.payload), `part ${j}`).toBe(true);
        if (want.filename !== undefined) expect(got.filename).toBe(want.filename);
      });
    });
  });
});
