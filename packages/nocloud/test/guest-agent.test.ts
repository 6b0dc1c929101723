// Peer: real shells (/bin/sh, and bash --posix when present: what #!/bin/sh is on Debian/Ubuntu and RHEL) running the script; the package managers and systemctl are seam fakes (stub scripts on a PATH of their own).
import { execFile } from 'node:child_process';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { which } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GUEST_AGENT_SCRIPT } from '../src/index.js';
import { tempDir } from './support/exec.js';

const shells: [string, string[]][] = [['/bin/sh', []]];
const bash = which('bash');
if (bash) shells.push([bash, ['--posix']]);

// Each stub logs its name and arguments, and keeps state in files so a
// second run sees what the first one did.
const STUBS: Record<string, string> = {
  'dpkg-query': `[ -f "$STATE/installed" ] && echo "install ok installed" || echo "unknown ok not-installed"`,
  rpm: `[ -f "$STATE/installed" ]`,
  'apt-get': `case "$*" in
  *update*) [ -z "\${FAIL_UPDATE:-}" ] ;;
  *install*) [ -z "\${FAIL_INSTALL:-}" ] && : > "$STATE/installed" ;;
esac`,
  dnf: `[ -z "\${FAIL_INSTALL:-}" ] && : > "$STATE/installed"`,
  yum: `[ -z "\${FAIL_INSTALL:-}" ] && : > "$STATE/installed"`,
  systemctl: `case "$1" in
  enable) exit 1 ;;
  is-active) [ -f "$STATE/active" ] ;;
  start) [ -z "\${FAIL_START:-}" ] && : > "$STATE/active" ;;
esac`,
  sleep: ':',
};

interface Outcome {
  code: number;
  calls: string[];
  stderr: string;
}

let root: string;
let remove: () => Promise<void>;
let n = 0;
beforeAll(async () => {
  ({ dir: root, remove } = await tempDir('nocloud-agent-'));
  await writeFile(join(root, 'script.sh'), GUEST_AGENT_SCRIPT);
});
afterAll(() => remove());

/** A fresh machine: a bin dir holding the named stubs and an empty state dir. */
async function machine(tools: readonly string[]): Promise<{ bin: string; state: string }> {
  const base = join(root, `m${n++}`);
  const bin = join(base, 'bin');
  const state = join(base, 'state');
  await mkdir(bin, { recursive: true });
  await mkdir(state, { recursive: true });
  for (const tool of tools) {
    const file = join(bin, tool);
    const body = STUBS[tool] ?? '';
    await writeFile(file, `#!/bin/sh\necho "\${0##*/} $*" >> "$STATE/calls"\n${body}\n`);
    await chmod(file, 0o755);
  }
  return { bin, state };
}

async function runScript(
  shell: [string, string[]],
  m: { bin: string; state: string },
  env: Record<string, string> = {},
): Promise<Outcome> {
  await rm(join(m.state, 'calls'), { force: true });
  const [cmd, args] = shell;
  const { code, stderr } = await new Promise<{ code: number; stderr: string }>((resolve) => {
    execFile(
      cmd,
      [...args, join(root, 'script.sh')],
      { env: { PATH: m.bin, STATE: m.state, ...env }, timeout: 10_000 },
      (err, _stdout, stderr) => {
        const c = err ? ((err as { code?: unknown }).code as number) : 0;
        resolve({ code: typeof c === 'number' ? c : -1, stderr });
      },
    );
  });
  const log = await readFile(join(m.state, 'calls'), 'utf8').catch(() => '');
  return { code, stderr, calls: log.split('\n').filter(Boolean) };
}

const DEBIAN = ['dpkg-query', 'apt-get', 'systemctl', 'sleep'];
const RHEL = ['rpm', 'dnf', 'systemctl', 'sleep'];

describe.each(shells)('guest-agent script under %s', (cmd, args) => {
  const shell: [string, string[]] = [cmd, args];

  it('installs and starts the agent on Debian/Ubuntu, then does nothing the second time', async () => {
    const m = await machine(DEBIAN);
    const first = await runScript(shell, m);
    expect(first.code, first.stderr).toBe(0);
    expect(first.calls).toEqual([
      `dpkg-query -W -f=${'$'}{Status} qemu-guest-agent`,
      'apt-get -o DPkg::Lock::Timeout=300 -q update',
      'apt-get -o DPkg::Lock::Timeout=300 -q -y install --no-install-recommends qemu-guest-agent',
      'systemctl enable qemu-guest-agent',
      'systemctl is-active --quiet qemu-guest-agent',
      'systemctl start qemu-guest-agent',
    ]);
    expect(first.stderr).toContain('qemu-guest-agent started');

    const again = await runScript(shell, m);
    expect(again.code, again.stderr).toBe(0);
    expect(again.calls.filter((c) => /^(apt-get|systemctl start)/.test(c))).toEqual([]);
    expect(again.stderr).toContain('already installed');
    expect(again.stderr).toContain('already running');
  });

  it('uses dnf on the RHEL family, then does nothing the second time', async () => {
    const m = await machine(RHEL);
    const first = await runScript(shell, m);
    expect(first.code, first.stderr).toBe(0);
    expect(first.calls).toContain('dnf -q -y install qemu-guest-agent');
    expect(first.calls).toContain('systemctl start qemu-guest-agent');
    const again = await runScript(shell, m);
    expect(again.code).toBe(0);
    expect(again.calls.some((c) => c.startsWith('dnf'))).toBe(false);
  });

  it('falls back to yum where there is no dnf', async () => {
    const m = await machine(['rpm', 'yum', 'systemctl']);
    const out = await runScript(shell, m);
    expect(out.code, out.stderr).toBe(0);
    expect(out.calls).toContain('yum -q -y install qemu-guest-agent');
  });

  it('fails with a reason when there is no package manager it knows', async () => {
    const out = await runScript(shell, await machine(['systemctl']));
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('found no apt-get, dnf or yum');
  });

  it('tries an install five times, ten seconds apart, then fails', async () => {
    const m = await machine(DEBIAN);
    const out = await runScript(shell, m, { FAIL_INSTALL: '1' });
    expect(out.code).toBe(1);
    expect(out.calls.filter((c) => c.includes(' install '))).toHaveLength(5);
    expect(out.calls.filter((c) => c === 'sleep 10')).toHaveLength(4);
    expect(out.stderr).toContain('apt-get could not install qemu-guest-agent');
  });

  it('goes on to the install when apt-get update fails', async () => {
    const out = await runScript(shell, await machine(DEBIAN), { FAIL_UPDATE: '1' });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).toContain('apt-get update failed');
    expect(out.calls.filter((c) => c.endsWith(' update'))).toHaveLength(5);
  });

  it('fails when the service does not start', async () => {
    const out = await runScript(shell, await machine(DEBIAN), { FAIL_START: '1' });
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('could not start qemu-guest-agent');
  });
});
