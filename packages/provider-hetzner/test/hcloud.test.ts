// Peer: the real `hcloud` CLI (Debian's hcloud-cli, over hcloud-go) against the Hetzner Cloud API
// double through HCLOUD_ENDPOINT and HCLOUD_TOKEN, side by side with the provider over its own
// undici client. The double must answer the CLI's own requests (image look-ups, action polling,
// paged listings with label selectors, firewall actions) the way the real API does, give its
// error answers in the shapes the CLI reads, and both clients must read each other's resources.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProvider, isNotFound, MarkKey, type Provider } from '@proxy-op/contract';
import { describeWithPeers, runProcess } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { firewallName } from '../src/firewall.js';
import { providerModule } from '../src/index.js';
import type { HetznerDouble } from './support/double/double.js';
import { createHetznerFixture, type HetznerFixture } from './support/fixture.js';

const { afterAll, beforeAll, expect } = vitest;
/** hcloud polls actions every 500 ms; a command takes seconds on a busy machine. */
const it = (name: string, fn: () => Promise<void>) => vitest.it(name, fn, 120_000);

describeWithPeers(vitest, 'hcloud against the Hetzner Cloud API double', ['hcloud'], () => {
  let fx: HetznerFixture;
  let double: HetznerDouble;
  let provider: Provider;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let token: string;
  const runs: { args: string; ms: number }[] = [];
  const userData = '#cloud-config\nruncmd: [echo "made by hcloud"]\n';

  beforeAll(async () => {
    // The CLI waits for the create and start actions: a second each keeps it quick.
    fx = await createHetznerFixture(
      {},
      { double: { timings: { initializingMs: 1000, startingMs: 1000, deleteMs: 300 } } },
    );
    double = fx.double;
    provider = fx.provider;
    token = [...double.tokens][0] as string;
    dir = mkdtempSync(join(tmpdir(), 'hcloud-double-'));
    writeFileSync(join(dir, 'user-data'), userData);
    env = {
      HCLOUD_ENDPOINT: double.url,
      HCLOUD_TOKEN: token,
      HCLOUD_CONFIG: join(dir, 'cli.toml'),
      HCLOUD_CONTEXT: '',
    };
  });

  afterAll(async () => {
    await fx?.cleanup?.();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    const total = runs.reduce((n, r) => n + r.ms, 0);
    console.log(
      `hcloud: ${runs.length} runs, ${total} ms in all, the longest ${Math.max(...runs.map((r) => r.ms))} ms (${runs.find((r) => r.ms === Math.max(...runs.map((x) => x.ms)))?.args})`,
    );
  });

  const hcloud = async (args: string[], extra: NodeJS.ProcessEnv = {}) => {
    const from = double.requests.length;
    const start = Date.now();
    const r = await runProcess('hcloud', args, { env: { ...env, ...extra }, timeoutMs: 90_000 });
    runs.push({ args: args.slice(0, 2).join(' '), ms: Date.now() - start });
    return { ...r, requests: double.requests.slice(from) };
  };

  it('server create: looks up the image, creates, waits on the create and start actions', async () => {
    const r = await hcloud([
      'server',
      'create',
      '--name',
      'vm-hcloud',
      '--type',
      'cx23',
      '--image',
      'ubuntu-24.04',
      '--location',
      'fsn1',
      '--label',
      'proxy-operator-managed=true',
      '--label',
      'proxy-operator-uid=uid-from-hcloud',
      '--user-data-from-file',
      join(dir, 'user-data'),
    ]);
    expect(r.code, r.stderr).toBe(0);
    const made = double.serverNamed('vm-hcloud');
    expect(made?.status).toBe('running');
    expect(r.stdout).toContain(`Server ${made?.id} created\n`);
    expect(r.stdout).toMatch(/^IPv4: 203\.0\.113\.\d+$/m);
    expect(r.stdout).toMatch(/^IPv6 Network: 2001:db8:[0-9a-f]+::\/64$/m);
    expect(r.requests[0]).toBe('GET /v1/images?name=ubuntu-24.04');
    expect(r.requests[1]).toBe('POST /v1/servers');
    expect(r.requests.slice(2, -1).every((q) => q.startsWith('GET /v1/actions'))).toBe(true);
    expect(r.requests.at(-1)).toBe(`GET /v1/servers/${made?.id}`);
    // user_data reaches the API byte for byte (the API never gives it back).
    expect(made?.userData).toBe(userData);
    expect(made?.labels).toEqual({
      'proxy-operator-managed': 'true',
      'proxy-operator-uid': 'uid-from-hcloud',
    });
  });

  it('the provider reads what hcloud made: Get and ListByTag', async () => {
    const got = await provider.get('servers/vm-hcloud');
    expect(got.uid).toBe('uid-from-hcloud');
    expect(got.state).toBe('Running');
    expect(got.ip).toBe(double.serverNamed('vm-hcloud')?.ipv4?.ip);
    expect(got.ipv6Range).toMatch(/^2001:db8:[0-9a-f]+::\/64$/);
    expect(got.installation).toBe('default');
    expect(got.location).toEqual({ region: 'fsn1', zone: 'fsn1-dc14', country: 'DE' });
    expect((await provider.listByTag()).map((i) => i.id)).toContain('servers/vm-hcloud');
  });

  it('hcloud reads what the provider made: server, labels, type, firewall and its rule', async () => {
    const cloudInit = '#cloud-config\nwrite_files: []\n';
    const id = await provider.create({
      name: 'proxy-made',
      namespace: 'default',
      uid: '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11',
      port: 3128,
      cloudInit: new TextEncoder().encode(cloudInit),
      allowedSources: ['192.0.2.0/24', '2001:db8:1::7'],
      placement: { region: 'nbg1', machineType: 'cx23', image: 'ubuntu-24.04' },
      installation: 'inst-1',
    });
    expect(id).toBe('servers/proxy-made');
    double.settle();
    const d = await hcloud(['server', 'describe', 'proxy-made', '-o', 'json']);
    expect(d.code, d.stderr).toBe(0);
    const server = JSON.parse(d.stdout) as {
      id: number;
      status: string;
      labels: Record<string, string>;
      server_type: { name: string };
      datacenter: { name: string; location: { name: string; country: string } };
      public_net: { firewalls: { id: number; status: string }[]; ipv6: { ip: string } };
      image: { name: string; architecture: string };
    };
    expect(server.status).toBe('running');
    expect(server.labels).toEqual({
      'proxy-operator-managed': 'true',
      'proxy-operator-uid': '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11',
      'proxy-operator-installation': 'inst-1',
    });
    expect(server.server_type.name).toBe('cx23');
    expect(server.image).toMatchObject({ name: 'ubuntu-24.04', architecture: 'x86' });
    expect(server.datacenter.location).toMatchObject({ name: 'nbg1', country: 'DE' });
    expect(double.servers.get(server.id)?.userData).toBe(cloudInit);

    const f = await hcloud(['firewall', 'describe', firewallName('proxy-made'), '-o', 'json']);
    expect(f.code, f.stderr).toBe(0);
    const fw = JSON.parse(f.stdout) as {
      id: number;
      labels: Record<string, string>;
      rules: Record<string, unknown>[];
      applied_to: { type: string; server: { id: number } }[];
    };
    expect(server.public_net.firewalls).toEqual([{ id: fw.id, status: 'applied' }]);
    expect(fw.labels).toEqual(server.labels);
    expect(fw.applied_to).toEqual([{ type: 'server', server: { id: server.id } }]);
    expect(fw.rules).toEqual([
      {
        direction: 'in',
        protocol: 'tcp',
        port: '3128',
        source_ips: ['192.0.2.0/24', '2001:db8:1::7/128'],
        destination_ips: [],
        description: 'proxy-op: the proxy port',
      },
    ]);
    const got = await provider.get(id);
    expect(got.ipv6Range).toBe(server.public_net.ipv6.ip);
    expect(got.location).toEqual({ region: 'nbg1', zone: 'nbg1-dc3', country: 'DE' });
  });

  it('server list: label selectors as the provider writes them, and a bad one refused', async () => {
    const list = (selector: string) =>
      hcloud(['server', 'list', '-l', selector, '-o', 'noheader', '-o', 'columns=name']);
    const mine = await list(`${MarkKey.Managed}=true,${MarkKey.Installation}==inst-1`);
    expect(mine.code, mine.stderr).toBe(0);
    expect(mine.stdout.trim()).toBe('proxy-made');
    expect(mine.requests).toEqual([
      'GET /v1/servers?label_selector=proxy-operator-managed%3Dtrue%2Cproxy-operator-installation%3D%3Dinst-1&page=1&per_page=50&sort=id%3Aasc',
    ]);
    const old = await list(`${MarkKey.Managed}=true,!${MarkKey.Installation}`);
    expect(old.stdout.trim()).toBe('vm-hcloud');
    const both = await list(
      `${MarkKey.Uid} in (uid-from-hcloud,6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11)`,
    );
    expect(both.stdout.trim().split('\n')).toEqual(['vm-hcloud', 'proxy-made']);
    const none = await list(
      `${MarkKey.Installation} notin (inst-1),${MarkKey.Uid}!=uid-from-hcloud`,
    );
    expect(none.stdout.trim()).toBe('');
    const bad = await list('proxy-operator-managed=true proxy');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(
      'hcloud: invalid label_selector: expected comma at pos 28 (invalid_input)\n',
    );
    // The provider's listing is one page with its own selector.
    const from = double.requests.length;
    const listed = await provider.listByTag({ installation: 'inst-1' });
    expect(listed.map((i) => i.id)).toEqual(['servers/proxy-made']);
    expect(double.requests.slice(from)).toEqual([
      'GET /v1/servers?label_selector=proxy-operator-managed%3Dtrue&page=1&per_page=50',
    ]);
  });

  it('a listing of more than one page: hcloud and the provider follow next_page', async () => {
    for (let i = 0; i < 55; i++) {
      double.plantServer(`paged-${i}`, {
        labels: {
          [MarkKey.Managed]: 'true',
          [MarkKey.Uid]: `uid-${i}`,
          [MarkKey.Installation]: 'paged',
        },
      });
    }
    try {
      const r = await hcloud([
        'server',
        'list',
        '-l',
        `${MarkKey.Installation}=paged`,
        '-o',
        'noheader',
        '-o',
        'columns=name',
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.trim().split('\n')).toHaveLength(55);
      expect(r.requests.map((q) => /page=(\d+)/.exec(q)?.[1])).toEqual(['1', '2']);
      const from = double.requests.length;
      expect(await provider.listByTag({ installation: 'paged' })).toHaveLength(55);
      expect(double.requests.length - from).toBe(2);
    } finally {
      for (const s of [...double.servers.values()]) {
        if (s.name.startsWith('paged-')) double.removeServer(s.id);
      }
    }
  });

  it('error answers: 401 unauthorized, as hcloud prints it and as the provider classifies it', async () => {
    const r = await hcloud(['server', 'list'], { HCLOUD_TOKEN: 'not-a-token' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('hcloud: unable to authenticate (unauthorized)\n');
    fx.writeToken('not-a-token');
    try {
      const err = await provider.get('servers/vm-hcloud').catch((e) => e);
      expect(err.code).toBe('PROVIDER_PERMANENT');
      expect(err.message).toContain('unable to authenticate (unauthorized, HTTP 401)');
      expect((await provider.check!())[0]?.reason).toBe('Unauthorized');
    } finally {
      fx.writeToken(token);
    }
  });

  it('error answers: not_found for an ID nobody has, to hcloud and to the provider', async () => {
    const r = await hcloud(['server', 'describe', '424242']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('hcloud: server not found: 424242\n');
    expect(r.requests).toEqual(['GET /v1/servers/424242']);
    expect(await provider.get('servers/nobody-has-this').catch(isNotFound)).toBe(true);
  });

  it('error answers: uniqueness_error on a name; the provider refuses a server that is not its own', async () => {
    const r = await hcloud([
      'server',
      'create',
      '--name',
      'proxy-made',
      '--type',
      'cx23',
      '--image',
      'ubuntu-24.04',
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('hcloud: server name is already used (uniqueness_error)\n');
    const err = await provider
      .create({
        name: 'vm-hcloud',
        namespace: 'default',
        uid: 'another-uid',
        port: 3128,
        cloudInit: new Uint8Array(),
        placement: { region: 'fsn1', machineType: 'cx23', image: 'ubuntu-24.04' },
      })
      .catch((e) => e);
    expect(err.code).toBe('PROVIDER_PERMANENT');
    expect(err.message).toContain('a server named vm-hcloud exists in fsn1-dc14');
  });

  it('error answers: invalid_input with details.fields (labels, server_type) and a type not offered in the location', async () => {
    const create = (...flags: string[]) =>
      hcloud(['server', 'create', '--name', 'vm-refused', '--image', 'ubuntu-24.04', ...flags]);
    const label = await create('--type', 'cx23', '--label', 'proxy-operator-uid=not a value');
    expect(label.stderr).toBe("hcloud: invalid input in field 'labels' (invalid_input)\n");
    const type = await create('--type', 'cx99');
    expect(type.stderr).toBe(
      "hcloud: invalid input in field 'server_type': server type not found (invalid_input)\n",
    );
    const where = await create('--type', 'cx23', '--location', 'ash');
    expect(where.stderr).toBe('hcloud: unsupported location for server type (invalid_input)\n');
    expect(double.serverNamed('vm-refused')).toBeUndefined();

    // The provider meets the same answers when its config names what the project lacks.
    const other = await createProvider(
      providerModule,
      'hetzner-misconfigured',
      { ...fx.config, locations: ['ash'], serverTypes: ['cx23', 'cx99'] },
      {},
    );
    try {
      const req = {
        name: 'proxy-refused',
        namespace: 'default',
        uid: 'uid-refused',
        port: 3128,
        cloudInit: new Uint8Array(),
        placement: { machineType: 'cx99', image: 'ubuntu-24.04' },
      };
      const e1 = await other.create(req).catch((e) => e);
      expect(e1.code).toBe('PROVIDER_PERMANENT');
      expect(e1.message).toContain(
        '(invalid_input, HTTP 422); fields: server_type: server type not found',
      );
      const e2 = await other
        .create({ ...req, placement: { machineType: 'cx23', image: 'ubuntu-24.04' } })
        .catch((e) => e);
      expect(e2.code).toBe('PROVIDER_PERMANENT');
      expect(e2.message).toContain(
        'unsupported location for server type (invalid_input, HTTP 422)',
      );
      // Nothing is left of either: the firewalls made for them are removed with the refusal.
      expect(double.serverNamed('proxy-refused')).toBeUndefined();
      expect([...double.firewalls.values()].map((x) => x.name)).not.toContain(
        firewallName('proxy-refused'),
      );
      const [health] = await other.check!();
      expect(health?.reason).toBe('ServerTypeNotFound');
    } finally {
      await other.close?.();
    }
  });

  it('error answers: resource_limit_exceeded, to hcloud and as QuotaExceeded to the provider', async () => {
    const limit = double.serverLimit;
    double.serverLimit = double.servers.size;
    try {
      const r = await hcloud([
        'server',
        'create',
        '--name',
        'vm-over-limit',
        '--type',
        'cx23',
        '--image',
        'ubuntu-24.04',
      ]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `hcloud: server limit of ${double.serverLimit} exceeded (resource_limit_exceeded)\n`,
      );
      const err = await provider
        .create({
          name: 'proxy-over-limit',
          namespace: 'default',
          uid: 'uid-over-limit',
          port: 3128,
          cloudInit: new Uint8Array(),
          placement: { region: 'fsn1', machineType: 'cx23', image: 'ubuntu-24.04' },
        })
        .catch((e) => e);
      expect(err.code).toBe('PROVIDER_QUOTA_EXCEEDED');
      expect(err.message).toContain('limits: server_limit');
    } finally {
      double.serverLimit = limit;
    }
  });

  it('error answers: 429 rate_limit_exceeded with its headers: hcloud prints it, the provider is Transient with the reset time', async () => {
    double.refuseForRate(1);
    const r = await hcloud(['server', 'list', '-o', 'noheader', '-o', 'columns=name']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'hcloud: limit of 3600 requests per hour reached (rate_limit_exceeded)\n',
    );
    expect(r.requests).toHaveLength(1);
    const again = await hcloud(['server', 'list', '-o', 'noheader', '-o', 'columns=name']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('vm-hcloud');
    double.refuseForRate(1);
    const before = Math.floor(Date.now() / 1000);
    const err = await provider.listByTag().catch((e) => e);
    expect(err.code).toBe('PROVIDER_TRANSIENT');
    expect(err.message).toContain('the rate limit of 3600 requests per hour was reached');
    const reset = /recovers by (\S+)$/.exec(err.message)?.[1];
    expect(Date.parse(reset ?? '') / 1000).toBeGreaterThanOrEqual(before + 3599);
  });

  it('server poweroff by hcloud: the provider reads Stopped; server delete: NotFound, and Delete takes its firewall', async () => {
    const off = await hcloud(['server', 'poweroff', 'proxy-made']);
    expect(off.code, off.stderr).toBe(0);
    expect((await provider.get('servers/proxy-made')).state).toBe('Stopped');
    const del = await hcloud(['server', 'delete', 'proxy-made']);
    expect(del.code, del.stderr).toBe(0);
    expect(del.stdout).toBe('Server proxy-made deleted\n');
    expect((await provider.get('servers/proxy-made')).state).toBe('Terminated');
    double.settle();
    expect(await provider.get('servers/proxy-made').catch(isNotFound)).toBe(true);
    await provider.delete('servers/proxy-made', { uid: '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11' });
    const f = await hcloud(['firewall', 'list', '-o', 'noheader', '-o', 'columns=name']);
    expect(f.code, f.stderr).toBe(0);
    expect(f.stdout).not.toContain(firewallName('proxy-made'));
  });

  it('the provider deletes what hcloud made: hcloud then lists nothing', async () => {
    await provider.delete('servers/vm-hcloud');
    const r = await hcloud(['server', 'list', '-o', 'noheader', '-o', 'columns=name']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('');
  });
});
