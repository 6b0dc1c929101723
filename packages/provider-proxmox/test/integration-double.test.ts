// Peer: the real-host test file (test/integration.test.ts) run by vitest in a
// child process, its PROXMOX_TEST_* variables pointing at the HTTPS fake of
// PVE in this process, at a real host's pace (the guest agent after 2 s
// rather than 45). The lifecycle the spec lists for a real host then runs
// in every `npm test`, and the test file is proved to work before anyone
// points it at a real host.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN_LINE } from './support/fixture.js';
import { type HttpsFake, startHttpsFake } from './support/https-fake.js';
import { PveModel, REALISTIC_TIMING } from './support/pve-model.js';

const require = createRequire(import.meta.url);
const VITEST = join(dirname(require.resolve('vitest/package.json')), 'vitest.mjs');
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));

let fake: HttpsFake;
let model: PveModel;
let dir: string;

beforeAll(async () => {
  model = new PveModel({ token: TOKEN_LINE, timing: { ...REALISTIC_TIMING, agentBootMs: 2_000 } });
  model.addTemplate(9001);
  fake = await startHttpsFake(model);
  dir = mkdtempSync(join(tmpdir(), 'pve-it-'));
  writeFileSync(join(dir, 'token'), `${TOKEN_LINE}\n`);
});
afterAll(async () => {
  await fake?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('the real-host test against the double', () => {
  it('runs both real-host tests, and they pass', { timeout: 180_000 }, async () => {
    const env = {
      ...process.env,
      PROXMOX_TEST_URL: fake.url,
      PROXMOX_TEST_TOKEN_FILE: join(dir, 'token'),
      PROXMOX_TEST_CA_FILE: fake.pki.caFile,
      PROXMOX_TEST_NODE: 'pv1-1',
      PROXMOX_TEST_TEMPLATE_VMID: '9001',
      PROXMOX_TEST_ISO_STORAGE: 'proxy-seeds',
      PROXMOX_TEST_TIMEOUT: '120s',
      NO_COLOR: '1',
    };
    const run = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        [VITEST, 'run', 'test/integration.test.ts', '--reporter=verbose', '--color=false'],
        { cwd: PACKAGE, env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
      });
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        out += d;
      });
      // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes
      child.on('close', (code) => resolve({ code, out: out.replace(/\u001b\[[0-9;]*m/g, '') }));
    });
    expect(run.code, run.out).toBe(0);
    expect(run.out).toMatch(/Tests\s+2 passed \(2\)/);
    expect(run.out).not.toContain('skipping');
    // What the lifecycle left on the host: nothing but the template.
    expect(model.guests()).toEqual([]);
    expect(model.isos.size).toBe(0);
    expect([...model.volumes.keys()]).toEqual(['local-lvm:base-9001-disk-0']);
  });
});
