// Peers: the Kubernetes API test server (the Secrets as stored, written as its admin); the local
// filesystem. The harness kubelet's Secret volumes: written before the container starts, kept up
// to date once per sync period, the last version kept when the Secret goes.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KubeTestServer } from '@proxy-op/kube-testserver';
import { eventually } from '@proxy-op/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { adminOk } from './support/admin.js';
import { SecretVolumes } from './support/volumes.js';

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups = [];
});

const b64 = (s: string) => Buffer.from(s).toString('base64');
const secretsPath = '/api/v1/namespaces/default/secrets';

async function setup(syncPeriodMs: number) {
  const server = await KubeTestServer.start();
  const volumes = new SecretVolumes(server, syncPeriodMs);
  cleanups.push(async () => {
    await volumes.close();
    await server.stop();
  });
  const pod = {
    metadata: { name: 'p', namespace: 'default' },
    spec: {
      volumes: [
        { name: 'auth', secret: { secretName: 's', items: [{ key: 'passwd', path: 'passwd' }] } },
      ],
      containers: [{ volumeMounts: [{ name: 'auth', mountPath: '/etc/squid/auth' }] }],
    },
  };
  return { server, volumes, pod };
}

describe('the harness kubelet’s Secret volumes', () => {
  it('refuse to start a container whose Secret is missing', async () => {
    const { volumes, pod } = await setup(50);
    await expect(volumes.mount(pod)).rejects.toThrow(/Secret s not found/);
  });

  it('follow the Secret within a sync period, and keep the last version once it is gone', async () => {
    const { server, volumes, pod } = await setup(100);
    await adminOk(server, 'POST', secretsPath, {
      body: { metadata: { name: 's' }, data: { passwd: b64('one\n') } },
    });
    const [mounted] = await volumes.mount(pod);
    expect(mounted).toMatchObject({ volume: 'auth', mountPath: '/etc/squid/auth' });
    const file = join(mounted!.hostDir, 'passwd');
    expect(await readFile(file, 'utf8')).toBe('one\n');
    const updates: string[] = [];
    volumes.onUpdated = (ns, name, volume) => updates.push(`${ns}/${name} ${volume}`);
    const changed = performance.now();
    await adminOk(server, 'PUT', `${secretsPath}/s`, {
      body: { metadata: { name: 's' }, data: { passwd: b64('two\n') } },
    });
    expect(await eventually(() => updates.length > 0, 5_000)).toBe(true);
    // Within one period and a little scheduling.
    expect(performance.now() - changed).toBeLessThan(1_000);
    expect(await readFile(file, 'utf8')).toBe('two\n');
    expect(updates).toEqual(['default/p auth']);
    await adminOk(server, 'DELETE', `${secretsPath}/s`);
    await new Promise((r) => setTimeout(r, 300));
    expect(await readFile(file, 'utf8')).toBe('two\n');
  });

  it('wait a whole period before they look again', async () => {
    const { server, volumes, pod } = await setup(60_000);
    await adminOk(server, 'POST', secretsPath, {
      body: { metadata: { name: 's' }, data: { passwd: b64('one\n') } },
    });
    const [mounted] = await volumes.mount(pod);
    await adminOk(server, 'PUT', `${secretsPath}/s`, {
      body: { metadata: { name: 's' }, data: { passwd: b64('two\n') } },
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(await readFile(join(mounted!.hostDir, 'passwd'), 'utf8')).toBe('one\n');
  });
});
