// Peers: npm (`npm pack` of this checkout and `npm install` with the Containerfile's own
// command, dependencies from the registry or npm's cache), the installed `proxy-op`, and the
// Kubernetes API test server it runs against. The image itself cannot be built here (no
// container runtime); this is what it would hold, run outside a container.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runProcess } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { writeImageContext } from '../scripts/image-context.js';
import { FIRST_PARTY_PROVIDERS } from '../src/providers/registry.js';
import { call, KubeTestServer, stored, until } from './kube-support.js';

const PKG = fileURLToPath(new URL('..', import.meta.url));
const REPO = join(PKG, '..', '..');

/** The workspace packages by name. */
async function workspaceNames(): Promise<Set<string>> {
  const { readdir } = await import('node:fs/promises');
  const names = new Set<string>();
  for (const d of await readdir(join(REPO, 'packages'))) {
    const f = join(REPO, 'packages', d, 'package.json');
    if (existsSync(f)) names.add((JSON.parse(await readFile(f, 'utf8')) as { name: string }).name);
  }
  return names;
}

describe('the container image’s packages', () => {
  let ctx = '';
  let names: string[] = [];
  let containerfile = '';
  const proxyOp = () => join(ctx, 'node_modules', '.bin', 'proxy-op');

  beforeAll(async () => {
    ctx = await mkdtemp(join(tmpdir(), 'proxy-op-image-'));
    names = await writeImageContext(ctx);
    containerfile = await readFile(join(PKG, 'Containerfile'), 'utf8');
  }, 120_000);

  afterAll(async () => {
    await rm(ctx, { recursive: true, force: true });
  });

  it('hold the operator and every first-party provider this checkout has', async () => {
    const ws = await workspaceNames();
    expect(names).toContain('@proxy-op/operator');
    for (const pkg of Object.values(FIRST_PARTY_PROVIDERS)) {
      expect(names.includes(pkg), pkg).toBe(ws.has(pkg));
    }
    expect(names).not.toContain('@proxy-op/providertest');
    expect(names).not.toContain('@proxy-op/kube-testserver');
  });

  it('run on the Node.js release the repository pins', async () => {
    const root = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    expect(containerfile).toContain(`ARG NODE_VERSION=${root.devDependencies.node}\n`);
    expect(containerfile).toMatch(/^USER 65532:65532$/m);
    expect(containerfile).toMatch(/^ENTRYPOINT \["proxy-op"\]$/m);
  });

  it('install with the Containerfile’s command and run proxy-op --help', async () => {
    const m = /^RUN (npm install [^\\\n]+?)\s*\\$/m.exec(containerfile);
    if (m?.[1] === undefined) throw new Error('no RUN npm install line in the Containerfile');
    const args = m[1].split(/\s+/).slice(1);
    expect(args).toEqual(['install', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund']);
    // The same command; only npm's cache is preferred to the network.
    const r = await runProcess('npm', [...args, '--prefer-offline', '--loglevel=error'], {
      cwd: ctx,
      timeoutMs: 280_000,
    });
    expect(r.stderr.split('\n').filter((l) => /ERR/.test(l))).toEqual([]);
    expect(r.code).toBe(0);
    const help = await runProcess(process.execPath, [proxyOp(), '--help'], { cwd: ctx });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain(
      'run                    reconcile the Proxies of the Kubernetes cluster',
    );
  }, 300_000);

  it('resolve the provider short names to the installed packages', async () => {
    const script = `import { ProviderRegistry, FIRST_PARTY_PROVIDERS } from '@proxy-op/operator';
const r = new ProviderRegistry();
for (const type of Object.keys(FIRST_PARTY_PROVIDERS)) {
  try { console.log(type, 'ok', (await r.resolve(type, process.cwd())).module.type); }
  catch (err) { console.log(type, 'missing', err.message); }
}
`;
    await writeFile(join(ctx, 'resolve.mjs'), script);
    const r = await runProcess(process.execPath, ['resolve.mjs'], { cwd: ctx });
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    for (const [type, pkg] of Object.entries(FIRST_PARTY_PROVIDERS)) {
      const line = lines.find((l) => l.startsWith(`${type} `));
      if (names.includes(pkg)) expect(line).toBe(`${type} ok ${type}`);
      else
        expect(line).toContain(
          `${type} missing provider type "${type}" comes from the package ${pkg}`,
        );
    }
    // An installation without one of them: the error names the package to install.
    const kvm = join(ctx, 'node_modules', '@proxy-op', 'provider-kvm');
    const aside = join(ctx, 'provider-kvm.aside');
    await rename(kvm, aside);
    try {
      const again = await runProcess(process.execPath, ['resolve.mjs'], { cwd: ctx });
      expect(again.stdout.split('\n').find((l) => l.startsWith('kvm '))).toBe(
        'kvm missing provider type "kvm" comes from the package @proxy-op/provider-kvm, which is not installed: run "npm install @proxy-op/provider-kvm" beside the operator (the container image has it)',
      );
      expect(again.stdout).toContain('kvm2 ok kvm2');
    } finally {
      await rename(aside, kvm);
    }
  });

  it('run against the Kubernetes API test server: the CRDs it prints, a Proxy to Ready', async () => {
    const server = await KubeTestServer.start();
    const crds = await runProcess(process.execPath, [proxyOp(), 'crds'], { cwd: ctx });
    expect(crds.code).toBe(0);
    for (const d of parseAllDocuments(crds.stdout)) {
      const r = await call(
        server,
        'POST',
        '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
        {
          body: d.toJS(),
        },
      );
      expect(r.status).toBe(201);
    }
    const kubeconfig = await server.writeKubeconfig(join(ctx, 'kubeconfig'));
    await writeFile(
      join(ctx, 'providers.yaml'),
      `installation: image\nproviders:\n  - name: here\n    type: local\n    local:\n      stateDir: ${join(ctx, 'local')}\n`,
    );
    const child = spawn(
      process.execPath,
      [
        proxyOp(),
        'run',
        '--kubeconfig',
        kubeconfig,
        '--providers',
        'providers.yaml',
        '--leader-election-namespace',
        'default',
        '--listen',
        'off',
        '--status-listen',
        '127.0.0.1:0',
        '--output',
        'json',
      ],
      { cwd: ctx, env: { ...process.env, HOME: ctx }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.stdout.resume();
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    try {
      await until(() => stderr.includes('"msg":"reconciling"'), 20_000, 'the operator to lead');
      // The installed package serves its status page, bundle and all.
      const pageUrl = /"statusPage":"(http:\/\/127\.0\.0\.1:\d+\/)"/.exec(stderr)?.[1];
      expect(pageUrl).toBeDefined();
      const html = await (await fetch(pageUrl as string)).text();
      const script = /<script[^>]*src="\.\/([^"]+)"/.exec(html)?.[1];
      expect(script).toMatch(/^assets\/index-[\w-]+\.js$/);
      expect((await fetch(`${pageUrl}${script}`)).status).toBe(200);
      const created = await call(
        server,
        'POST',
        '/apis/proxy-op.io/v1alpha1/namespaces/default/proxies',
        {
          body: {
            apiVersion: 'proxy-op.io/v1alpha1',
            kind: 'Proxy',
            metadata: { name: 'img' },
            spec: { provider: 'here', allowedSources: ['127.0.0.0/8'] },
          },
        },
      );
      expect(created.status).toBe(201);
      await until(() => stored(server, 'img')?.status?.phase === 'Ready', 20_000, 'img Ready');
      expect(stored(server, 'img')?.status.endpoint).toMatch(/^http:\/\/127\.0\.0\.\d+:3128$/);
      // Deleted through the operator, so the local proxy process goes too.
      await call(server, 'DELETE', '/apis/proxy-op.io/v1alpha1/namespaces/default/proxies/img');
      await until(() => stored(server, 'img') === undefined, 20_000, 'img gone');
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await server.stop();
    }
  }, 90_000);
});
