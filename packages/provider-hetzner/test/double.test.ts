// Peer: the Hetzner Cloud API double itself, over HTTP with fetch: its answers compared with the
// captured and documented ones in test/fixtures/api, its refusals, its rate-limit headers, its
// timings (the real API's by default) and its pagination. The real hcloud CLI holds it to the
// API's client side in test/hcloud.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { errorFixtures } from './support/cases.js';
import { type HetznerDouble, REAL_TIMINGS, startHetznerDouble } from './support/double/double.js';

let double: HetznerDouble | undefined;
afterEach(async () => {
  await double?.close();
  double = undefined;
});

async function start(o: Parameters<typeof startHetznerDouble>[0] = {}) {
  double = await startHetznerDouble({ tokens: ['t0k3n'], ...o });
  return double;
}

async function call(
  d: HetznerDouble,
  method: string,
  path: string,
  body?: unknown,
  token = 't0k3n',
) {
  const res = await fetch(`${d.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text === '' ? undefined : JSON.parse(text),
  };
}

const fixture = (name: string) => {
  const f = errorFixtures.find((x) => x.name === name);
  if (f === undefined) throw new Error(`no fixture ${name}`);
  return f;
};

const server = (o: Record<string, unknown> = {}) => ({
  name: 'vm-1',
  server_type: 'cx23',
  image: 'ubuntu-24.04',
  location: 'fsn1',
  labels: { 'proxy-operator-managed': 'true' },
  user_data: '#cloud-config\n',
  start_after_create: true,
  public_net: { enable_ipv4: true, enable_ipv6: true },
  ...o,
});

describe('the Hetzner Cloud API double', () => {
  it('answers as the captured and documented answers do', async () => {
    const d = await start();
    const cases: [string, Awaited<ReturnType<typeof call>>][] = [
      ['401 unknown token', await call(d, 'GET', '/servers', undefined, 'wrong')],
      [
        '422 bad label',
        await call(d, 'POST', '/servers', server({ labels: { k: 'not a value' } })),
      ],
      [
        '422 type not offered in the location',
        await call(d, 'POST', '/servers', server({ location: 'ash' })),
      ],
      ['422 unknown location', await call(d, 'POST', '/servers', server({ location: 'ash1' }))],
    ];
    for (const [name, got] of cases) {
      const f = fixture(name);
      expect(got.status, name).toBe(f.httpStatus);
      expect(got.body.error.code, name).toBe(f.body.error.code);
      expect(Object.keys(got.body.error).sort(), name).toEqual(['code', 'details', 'message']);
      if (name !== '422 unknown location') expect(got.body, name).toEqual(f.body);
      else expect(got.body.error.message).toBe("location 'ash1' not found");
    }
  });

  it('refuses an unknown server type or image, a bad label key, a long user_data and a name in use', async () => {
    const d = await start();
    const type = await call(d, 'POST', '/servers', server({ server_type: 'cx99' }));
    expect([type.status, type.body.error.details]).toEqual([
      422,
      { fields: [{ name: 'server_type', messages: ['server type not found'] }] },
    ]);
    const image = await call(d, 'POST', '/servers', server({ image: 'windows-2022' }));
    expect(image.body.error.details.fields[0].name).toBe('image');
    const key = await call(d, 'POST', '/servers', server({ labels: { 'hetzner.cloud/x': 'y' } }));
    expect(key.body.error).toMatchObject({
      message: "invalid input in field 'labels'",
      details: { fields: [{ name: 'labels', messages: ['invalid label key'] }] },
    });
    const long = await call(
      d,
      'POST',
      '/servers',
      server({ user_data: 'x'.repeat(32 * 1024 + 1) }),
    );
    expect(long.body.error.message).toBe("invalid input in field 'user_data': is too long");
    expect((await call(d, 'POST', '/servers', server())).status).toBe(201);
    const again = await call(d, 'POST', '/servers', server());
    expect([again.status, again.body.error.code, again.body.error.details]).toEqual([
      409,
      'uniqueness_error',
      { fields: [{ name: 'name' }] },
    ]);
    expect(d.servers.size).toBe(1);
  });

  it('sends the rate-limit headers on every answer, and 429 with them when the limit is used up', async () => {
    const d = await start();
    const ok = await call(d, 'GET', '/locations');
    expect(ok.headers.get('ratelimit-limit')).toBe('3600');
    expect(Number(ok.headers.get('ratelimit-remaining'))).toBe(3599);
    const now = Math.floor(Date.now() / 1000);
    expect(Number(ok.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(now);
    d.refuseForRate(1);
    const refused = await call(d, 'GET', '/locations');
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limit_exceeded');
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    expect(Number(refused.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(now + 3600);
  });

  it('runs a server through initializing and starting to running on the real time scale by default', async () => {
    expect(REAL_TIMINGS.initializingMs + REAL_TIMINGS.startingMs).toBeGreaterThanOrEqual(20_000);
    const d = await start();
    const made = await call(d, 'POST', '/servers', server());
    expect(made.status).toBe(201);
    expect(made.body.server.status).toBe('initializing');
    expect(made.body.action).toMatchObject({ command: 'create_server', status: 'running' });
    expect(made.body.next_actions).toMatchObject([{ command: 'start_server', status: 'running' }]);
    expect(made.body.root_password).toEqual(expect.any(String));
    expect(made.body.server.public_net.ipv4.ip).toMatch(/^203\.0\.113\./);
    await new Promise((r) => setTimeout(r, 300));
    const id = made.body.server.id;
    expect((await call(d, 'GET', `/servers/${id}`)).body.server.status).toBe('initializing');
    d.settle();
    expect((await call(d, 'GET', `/servers/${id}`)).body.server.status).toBe('running');
    expect((await call(d, 'GET', `/actions/${made.body.action.id}`)).body.action.status).toBe(
      'success',
    );
  });

  it('deletes a server through deleting, and refuses to delete a firewall still applied', async () => {
    const d = await start({ timings: { initializingMs: 10, startingMs: 10, deleteMs: 100 } });
    const fw = await call(d, 'POST', '/firewalls', {
      name: 'fw-1',
      rules: [{ direction: 'in', protocol: 'tcp', port: '3128', source_ips: ['0.0.0.0/0'] }],
    });
    expect(fw.status).toBe(201);
    const made = await call(
      d,
      'POST',
      '/servers',
      server({ firewalls: [{ firewall: fw.body.firewall.id }] }),
    );
    const id = made.body.server.id;
    expect(made.body.server.public_net.firewalls).toEqual([
      { id: fw.body.firewall.id, status: 'applied' },
    ]);
    const busy = await call(d, 'DELETE', `/firewalls/${fw.body.firewall.id}`);
    expect([busy.status, busy.body.error.code]).toEqual([422, 'resource_in_use']);
    const del = await call(d, 'DELETE', `/servers/${id}`);
    expect(del.body.action).toMatchObject({ command: 'delete_server', status: 'running' });
    expect((await call(d, 'GET', `/servers/${id}`)).body.server.status).toBe('deleting');
    await new Promise((r) => setTimeout(r, 200));
    const gone = await call(d, 'GET', `/servers/${id}`);
    expect([gone.status, gone.body.error.code]).toEqual([404, 'not_found']);
    expect((await call(d, 'DELETE', `/firewalls/${fw.body.firewall.id}`)).status).toBe(204);
  });

  it('pages listings (25 by default, at most 50) and filters by label selector', async () => {
    const d = await start();
    for (let i = 0; i < 60; i++) {
      d.plantServer(`s-${i}`, { labels: i % 2 === 0 ? { even: 'yes' } : {} });
    }
    const first = await call(d, 'GET', '/servers');
    expect(first.body.servers).toHaveLength(25);
    expect(first.body.meta.pagination).toEqual({
      page: 1,
      per_page: 25,
      previous_page: null,
      next_page: 2,
      last_page: 3,
      total_entries: 60,
    });
    const big = await call(d, 'GET', '/servers?per_page=100&page=2');
    expect(big.body.servers).toHaveLength(10);
    expect(big.body.meta.pagination.next_page).toBeNull();
    const even = await call(d, 'GET', '/servers?label_selector=even%3D%3Dyes&per_page=50');
    expect(even.body.servers).toHaveLength(30);
    const odd = await call(d, 'GET', '/servers?label_selector=!even&per_page=50');
    expect(odd.body.servers).toHaveLength(30);
    const bad = await call(d, 'GET', '/servers?label_selector=even%20in%20yes');
    expect(bad.body.error.message).toBe('invalid label_selector: expected ( at pos 8');
  });

  it('offers server types per location, and images per architecture', async () => {
    const d = await start();
    const types = await call(d, 'GET', '/server_types?name=cax11');
    expect(types.body.server_types[0]).toMatchObject({
      name: 'cax11',
      architecture: 'arm',
      locations: [{ name: 'fsn1' }, { name: 'nbg1' }, { name: 'hel1' }],
    });
    const images = await call(d, 'GET', '/images?name=ubuntu-24.04');
    expect(images.body.images.map((i: { architecture: string }) => i.architecture)).toEqual([
      'x86',
      'arm',
    ]);
    const arm = await call(d, 'POST', '/servers', server({ server_type: 'cax11' }));
    expect(arm.body.server.image.architecture).toBe('arm');
    const locations = await call(d, 'GET', '/locations');
    expect(
      locations.body.locations.map(
        (l: { name: string; country: string }) => `${l.name}=${l.country}`,
      ),
    ).toEqual(['fsn1=DE', 'nbg1=DE', 'hel1=FI', 'ash=US', 'hil=US', 'sin=SG']);
  });
});
