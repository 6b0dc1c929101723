// Peer: the `proxy-op` command as a user runs it (bin/proxy-op.js, running main() of the built dist/cli/main.js), with a file-backed reference provider.
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { type CliWorkspace, cliWorkspace, runCli, spawnCli } from './cli-support.js';

let ws: CliWorkspace;
beforeAll(async () => {
  ws = await cliWorkspace();
});
afterAll(() => ws.dispose());

// Generous: a child process that loads the OpenTelemetry SDK and the providers can take many
// seconds to print its first line on a loaded 2-core machine.
describe('proxy-op CLI', { timeout: 90_000 }, () => {
  it('prints usage and exits 2 on an unknown command', async () => {
    const r = await runCli(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown command "frobnicate"');
    expect(r.stderr).toContain('run --standalone DIR');
  });

  it('is linked from a committed file, so npm ci links it before the first build', async () => {
    const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as {
      bin: Record<string, string>;
      files: string[];
    };
    expect(pkg.bin).toEqual({ 'proxy-op': './bin/proxy-op.js' });
    expect(pkg.files).toContain('bin');
    const mode = (await stat(new URL('../bin/proxy-op.js', import.meta.url))).mode;
    expect(mode & 0o111).not.toBe(0);
  });

  it('refuses run on Kubernetes with no cluster configured (exit 2), naming the ways to give one', async () => {
    const r = await runCli(['run'], {
      HOME: '/nonexistent',
      KUBECONFIG: '',
      KUBERNETES_SERVICE_HOST: '',
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'no Kubernetes cluster configured: give --kubeconfig, set KUBECONFIG',
    );
    expect(r.stderr).toContain('--standalone');
  });

  it('validate prints every problem with its path and exits 1', async () => {
    const bad = `${ws.root}/bad-providers.yaml`;
    await writeFile(
      bad,
      'installation: X\nproviders:\n  - name: a\n    type: nosuch\n  - type: memory\n',
    );
    const r = await runCli(['validate', '--providers', bad]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('installation: ');
    expect(r.stderr).toContain('providers[0].type: unknown provider type "nosuch"');
    expect(r.stderr).toContain('providers[1].name: is required');
    const ok = await runCli(['validate', '--providers', ws.providers, '--standalone', ws.dir]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('ok (installation test, 1 providers)');
  });

  it('validate reports manifest problems with file and path', async () => {
    await writeFile(
      `${ws.dir}/broken.yaml`,
      'apiVersion: proxy-op.io/v1alpha1\nkind: Proxy\nmetadata: { name: x }\nspec: { provider: lab, port: 0, allowedSources: [nope] }\n',
    );
    const r = await runCli(['validate', '--providers', ws.providers, '--standalone', ws.dir]);
    await rm(`${ws.dir}/broken.yaml`);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('broken.yaml: spec.port: must be >= 1');
    expect(r.stderr).toContain('broken.yaml: spec.allowedSources[0]: must be a CIDR');
  });

  it('check prints a table and exits 0 when every target is ready', async () => {
    const r = await runCli(['check', '--providers', ws.providers]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toMatch(
      /^PROVIDER\s+TYPE\s+TARGET\s+READY\s+REASON\s+MESSAGE$/,
    );
    expect(r.stdout).toMatch(/lab\s+memory-file\s+zone-a\s+yes\s+Reachable/);
  });

  it('without a providers file, validate and check use the built-in local provider', async () => {
    // ws.dir (the manifests folder) has no providers.yaml: the built-in default applies.
    const v = await runCli(['validate', '--standalone', '.'], {}, 20_000, ws.dir);
    expect(v.code).toBe(0);
    expect(v.stdout).toContain('no providers.yaml: the built-in "local" provider');
    // The local provider's default state folder is under XDG_STATE_HOME: a temp folder here.
    const c = await runCli(['check'], { XDG_STATE_HOME: join(ws.dir, '.state') }, 20_000, ws.dir);
    expect(c.code).toBe(0);
    expect(c.stdout).toMatch(/local\s+local\s+state-dir\s+yes\s+Reachable/);
    expect(c.stdout).toMatch(/local\s+local\s+address-range\s+yes\s+Reachable/);
    // An explicit --providers FILE must exist.
    const missing = await runCli(['check', '--providers', 'nope.yaml'], {}, 20_000, ws.dir);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nope.yaml: invalid providers file');
  });

  it('check exits 1 and says why when a target is not ready', async () => {
    const r = await runCli(['check', '--providers', ws.providers], {
      PROXY_OP_TEST_UNREACHABLE: 'zone-a',
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/lab\s+memory-file\s+zone-a\s+no\s+Unreachable/);
  });

  it('run --once takes manifests to Ready, prints JSON lines, and status shows them', async () => {
    await ws.writeProxy('web', 3128);
    const r = await runCli(ws.runArgs(['--once']));
    expect(r.code).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { proxy: string; phase: string; endpoint?: string });
    const last = lines.at(-1);
    expect(last).toMatchObject({ proxy: 'default/web', phase: 'Ready' });
    expect(last?.endpoint).toMatch(/^http:\/\/10\.0\.0\.\d+:3128$/);
    const logs = r.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const created = logs.find((l) => l.msg === 'instance created');
    expect(created?.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(created?.spanId).toMatch(/^[0-9a-f]{16}$/);
    const st = await runCli(['status', '--standalone', ws.dir]);
    expect(st.stdout).toMatch(
      /^NAMESPACE\s+NAME\s+PROVIDER\s+PHASE\s+ENDPOINT\s+EGRESS\s+PROBE\s+COST\/H\s+AGE\n/,
    );
    expect(st.stdout).toMatch(/default\s+web\s+lab\s+Ready\s+http:\/\/10\.0\.0\.\d+:3128/);
    const backend = JSON.parse(await readFile(ws.backendFile, 'utf8')) as unknown[];
    expect(backend).toHaveLength(1);
  });

  it('run lists the manifests that fail validation, with their problems, in its output', async () => {
    await ws.writeProxy('web', 3128);
    await writeFile(
      `${ws.dir}/broken.yaml`,
      'apiVersion: proxy-op.io/v1alpha1\nkind: Proxy\nmetadata: { name: x }\nspec: { provider: lab, port: 0, allowedSources: [10.0.0.0/8] }\n',
    );
    const r = await runCli(ws.runArgs(['--once', '--output', 'json']));
    await rm(`${ws.dir}/broken.yaml`);
    expect(r.code).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual(
      expect.objectContaining({
        phase: 'Invalid',
        source: 'broken.yaml',
        problem: 'spec.port: must be >= 1',
      }),
    );
    // The valid manifest is reconciled all the same.
    expect(lines).toContainEqual(expect.objectContaining({ proxy: 'default/web', phase: 'Ready' }));
  });

  it('serves /metrics, /healthz and /readyz while running, and stops on SIGTERM', async () => {
    const child = spawnCli(ws.runArgs(['--listen', '127.0.0.1:0']));
    onTestFinished(() => {
      child.kill('SIGKILL');
    });
    const url = await child.waitForLog((l) => (typeof l.url === 'string' ? l.url : undefined));
    await child.waitForLog((l) =>
      l.msg === 'proxy-op running in standalone mode' ? true : undefined,
    );
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    // The first pass over the Proxy may still be under way when the log line comes.
    let metrics = '';
    for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
      metrics = await (await fetch(`${url}/metrics`)).text();
      if (metrics.includes('proxy_op_reconcile_total')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(metrics).toMatch(/proxy_op_proxies\{phase="Ready"[^}]*\} 1/);
    expect(metrics).toContain('proxy_op_reconcile_total');
    child.kill('SIGTERM');
    expect(await child.exit).toMatchObject({ code: 0 });
  });

  it('waits for a provider the file does not name yet, and proceeds when the file gains it', async () => {
    await writeFile(
      `${ws.dir}/late.yaml`,
      'apiVersion: proxy-op.io/v1alpha1\nkind: Proxy\nmetadata:\n  name: late\nspec:\n  provider: later\n  placement: { machineType: small, image: debian-13 }\n  allowedSources: [10.0.0.0/8]\n',
    );
    const child = spawnCli(ws.runArgs(['--providers-poll', '50ms', '--output', 'json']));
    onTestFinished(async () => {
      child.kill('SIGKILL');
      await ws.writeProviders(['lab']);
      await rm(`${ws.dir}/late.yaml`, { force: true });
    });
    await child.waitForLog((l) =>
      l.msg === 'proxy-op running in standalone mode' ? true : undefined,
    );
    await child.waitForStdout((l) =>
      l.proxy === 'default/late' && l.phase === 'Pending' ? true : undefined,
    );
    await ws.writeProviders(['lab', 'later']);
    await child.waitForStdout((l) =>
      l.proxy === 'default/late' && l.phase === 'Ready' ? true : undefined,
    );
    await rm(`${ws.dir}/late.yaml`);
    await child.waitForStdout((l) =>
      l.proxy === 'default/late' && l.phase === 'Deleted' ? true : undefined,
    );
    child.kill('SIGTERM');
    expect((await child.exit).code).toBe(0);
  });

  it('run --once stopped by SIGTERM before every Proxy settled exits 1, and the next run finishes', async () => {
    const own = await cliWorkspace();
    onTestFinished(() => own.dispose());
    await own.writeProxy('held', 3128);
    expect((await runCli(own.runArgs(['--once']))).code).toBe(0);
    // Its instance is held by "lab", which the providers file no longer names: the
    // deletion waits for it, so the run cannot settle.
    await rm(`${own.dir}/held.yaml`);
    await own.writeProviders(['other']);
    const child = spawnCli(own.runArgs(['--once']));
    onTestFinished(() => {
      child.kill('SIGKILL');
    });
    await child.waitForLog((l) =>
      l.msg === 'proxy-op running in standalone mode' ? true : undefined,
    );
    child.kill('SIGTERM');
    expect(await child.exit).toMatchObject({ code: 1 });
    await child.waitForLog((l) =>
      l.msg === 'stopped before every Proxy settled; exiting with code 1' ? true : undefined,
    );
    await own.writeProviders(['lab']);
    const again = await runCli(own.runArgs(['--once']));
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(await readFile(own.backendFile, 'utf8'))).toEqual([]);
    const state = JSON.parse(await readFile(`${own.dir}.state.json`, 'utf8')) as {
      proxies: object;
    };
    expect(state.proxies).toEqual({});
  });

  it('prints a status table with --output table', async () => {
    const r = await runCli(ws.runArgs(['--once', '--output', 'table']));
    expect(r.stdout).toMatch(
      /NAMESPACE\s+NAME\s+PROVIDER\s+PHASE\s+ENDPOINT\s+EGRESS\s+PROBE\s+AGE\s+ERROR/,
    );
    expect(r.stdout).toMatch(/default\s+web\s+lab\s+Ready\s+http:\/\//);
  });

  it('deleting a manifest deletes the instance before the state forgets the Proxy', async () => {
    await rm(`${ws.dir}/web.yaml`);
    const r = await runCli(ws.runArgs(['--once']));
    expect(r.code).toBe(0);
    expect(JSON.parse(await readFile(ws.backendFile, 'utf8'))).toEqual([]);
    const state = JSON.parse(await readFile(`${ws.dir}.state.json`, 'utf8')) as { proxies: object };
    expect(state.proxies).toEqual({});
  });
});
