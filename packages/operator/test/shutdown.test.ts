// Peers: the `proxy-op` command (bin/proxy-op.js) running on Kubernetes against the Kubernetes
// API test server (held to kubectl and client-node), over the file-backed reference provider
// (fixtures/file-provider.mjs) whose listing hangs until its signal aborts it.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { type CliWorkspace, cliWorkspace, spawnCli } from './cli-support.js';
import { installCrds, KubeTestServer } from './kube-support.js';

let server: KubeTestServer;
let ws: CliWorkspace;
let kubeconfig = '';

beforeAll(async () => {
  server = await KubeTestServer.start();
  await installCrds(server);
  ws = await cliWorkspace();
  kubeconfig = await server.writeKubeconfig(join(ws.root, 'kubeconfig'));
});

afterAll(async () => {
  await server?.stop();
  await ws?.dispose();
});

describe('stopping the operator', { timeout: 90_000 }, () => {
  it('SIGTERM during a slow GC list returns within the shutdown grace: the list is aborted', async () => {
    const graceMs = 10_000;
    const child = spawnCli(
      [
        'run',
        `--providers=${ws.providers}`,
        `--kubeconfig=${kubeconfig}`,
        '--leader-elect=false',
        '--listen=off',
        '--output=json',
        '--health-interval=0',
        '--gc-interval=100ms',
        `--shutdown-grace=${graceMs / 1000}s`,
      ],
      // The GC's list hangs until its signal aborts it: only the stop can end it in time (the
      // call's own deadline is 2 minutes).
      { PROXY_OP_TEST_HANG: 'list', HOME: ws.root },
    );
    onTestFinished(() => {
      child.kill('SIGKILL');
    });
    await child.waitForLog((l) => (l.msg === 'reconciling' ? true : undefined));
    await child.waitForLog((l) =>
      l.fixture === 'hanging' && l.call === 'list' ? true : undefined,
    );
    const signalled = Date.now();
    child.kill('SIGTERM');
    const exit = await child.exit;
    const took = Date.now() - signalled;
    expect(exit.code).toBe(0);
    expect(took).toBeLessThan(graceMs);
    const msgs = child.logs.map((l) => l.msg);
    expect(msgs).toContain('GC pass stopped: the operator is stopping');
    expect(msgs.indexOf('GC pass stopped: the operator is stopping')).toBeLessThan(
      msgs.indexOf('proxy-op stopped'),
    );
  });
});
