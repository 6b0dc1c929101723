// Peer: the real @google-cloud/compute client over REST, and plain HTTP requests, against the
// Compute API double. Two things are proved here: every captured or documented error body in
// test/fixtures/compute reaches classify through the real client with the class the table
// gives it, and the double's answers keep the shapes of the captured ones.
import { readFileSync } from 'node:fs';
import { errorClassOf } from '@proxy-op/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ComputeApiError } from '../src/errors.js';
import { errorFixtures } from './support/cases.js';
import { SELF_LINK_BASE } from './support/compute-double.js';
import { createGcpFixture, type GcpFixture } from './support/fixture.js';
import { WARM_MS, warmSdk } from './support/sdk.js';

beforeAll(warmSdk, WARM_MS);

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`fixtures/compute/${name}`, import.meta.url), 'utf8'));

describe('error answers through the real client', () => {
  let fx: GcpFixture;
  beforeAll(async () => {
    fx = await createGcpFixture({}, { config: { firewall: { enabled: false } } });
  });
  afterAll(() => fx.cleanup?.());

  for (const f of errorFixtures) {
    it(`${f.name} (${f.source.split(':')[0]}) is ${f.want}`, async () => {
      fx.double.answerNext(f.httpStatus, f.body);
      const op =
        f.op === 'list'
          ? fx.provider.listByTag()
          : fx.provider.get('zones/us-central1-a/instances/proxy-web-2');
      const err = await op.catch((e: unknown) => e);
      // A 404 on instances.get is read as "missing": the provider then reads the insert
      // operations, and answers NotFound.
      expect(errorClassOf(err), String((err as Error).message)).toBe(f.want);
      if (f.httpStatus !== 404) {
        expect((err as Error).message).toContain(f.body.error.message.slice(0, 40));
        const cause = (err as { cause?: unknown }).cause;
        expect(cause).toBeInstanceOf(ComputeApiError);
        expect((cause as ComputeApiError).httpStatus).toBe(f.httpStatus);
      }
    });
  }

  it('a 200 that is not JSON, an empty object, null, wrong types: malformed answers, never NotFound', async () => {
    for (const kind of ['not-json', 'empty-object', 'null', 'wrong-type']) {
      fx.double.injectMalformed(kind);
      const err = await fx.provider
        .get('zones/us-central1-a/instances/proxy-web-3')
        .catch((e) => e);
      expect(errorClassOf(err), kind).toBe('Transient');
      expect(err.code, `${kind}: ${err.message}`).toBe('PROVIDER_MALFORMED_ANSWER');
    }
  });
});

describe('the double keeps the captured shapes', () => {
  let fx: GcpFixture;
  let base: string;
  let auth: Record<string, string>;
  beforeAll(async () => {
    fx = await createGcpFixture({}, { config: { firewall: { enabled: false } } });
    base = `${fx.double.url}/compute/v1/projects/${fx.double.project}`;
    auth = { authorization: `Bearer ${[...fx.double.tokens][0]}` };
  });
  afterAll(() => fx.cleanup?.());
  const get = async (path: string, init: RequestInit = {}) => {
    const r = await fetch(`${base}${path}`, {
      ...init,
      headers: { ...auth, ...(init.headers ?? {}) },
    });
    return {
      status: r.status,
      body: (r.status === 204 ? undefined : await r.json()) as Record<string, unknown>,
    };
  };

  it('a zone: the keys, kind, links and status of the capture', async () => {
    const want = fixture('zone.json');
    const { status, body } = await get('/zones/us-central1-a');
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(want.keys);
    const sub = (s: string) => s.replace('{project}', fx.double.project);
    expect([body.kind, body.region, body.selfLink, body.status]).toEqual([
      want.kind,
      sub(want.region),
      sub(want.selfLink),
      want.status,
    ]);
  });

  it('an aggregated page: top-level keys and the empty-scope warning of the capture', async () => {
    const want = fixture('aggregated-page.json');
    const { body } = await get(
      '/aggregated/instances?alt=json&includeAllScopes=True&maxResults=500&returnPartialSuccess=True',
    );
    expect(Object.keys(body).sort()).toEqual(want.topLevelKeys);
    const scope = 'zones/europe-west1-b';
    const sample = JSON.parse(JSON.stringify(want.emptyScope).replaceAll('global', scope));
    expect((body.items as Record<string, unknown>)[scope]).toEqual(sample);
  });

  it('an operation: the keys of the captured RUNNING insert and of its DONE wait', async () => {
    const want = fixture('aggregated-page.json').operation;
    fx.double.opMs = 60_000;
    const { body: running } = await get('/global/firewalls', {
      method: 'POST',
      body: JSON.stringify({ name: 'fw-shape', allowed: [{ IPProtocol: 'tcp', ports: ['22'] }] }),
    });
    expect(Object.keys(running).sort()).toEqual(want.running);
    fx.double.settle();
    const { body: done } = await get(`/global/operations/${String(running.name)}/wait`, {
      method: 'POST',
    });
    expect(Object.keys(done).sort()).toEqual(want.done);
    expect(done.status).toBe('DONE');
    expect(running.name).toMatch(/^operation-\d{13}-[0-9a-f]{13}-[0-9a-f]{8}-[0-9a-f]{8}$/);
    expect(done.insertTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}-0[78]:00$/);
  });

  it('refuses what the API refuses, with its messages', async () => {
    const insert = (body: unknown) =>
      get('/zones/us-central1-a/instances', { method: 'POST', body: JSON.stringify(body) });
    const minimal = {
      machineType: 'zones/us-central1-a/machineTypes/e2-small',
      disks: [
        {
          boot: true,
          initializeParams: { sourceImage: 'projects/debian-cloud/global/images/family/debian-12' },
        },
      ],
      networkInterfaces: [{ network: 'global/networks/default' }],
    };
    const label = await insert({
      ...minimal,
      name: 'vm-l',
      labels: { when: '2020-07-31T19:20:20Z' },
    });
    const want = errorFixtures.find((f) => f.name.startsWith('400 label'));
    expect(label).toEqual({ status: 400, body: want?.body });
    const named = await insert({ ...minimal, name: '1vm' });
    expect(named.status).toBe(400);
    expect((named.body.error as { message: string }).message).toBe(
      "Invalid value for field 'resource.name': '1vm'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'",
    );
    await insert({ ...minimal, name: 'vm-twice' });
    const twice = await insert({ ...minimal, name: 'vm-twice' });
    expect(twice.status).toBe(409);
    expect(twice.body).toEqual(
      JSON.parse(
        JSON.stringify(errorFixtures.find((f) => f.name.startsWith('409'))?.body).replaceAll(
          'proxy-web-1',
          'vm-twice',
        ),
      ),
    );
    const missing = await get('/zones/us-central1-a/instances/proxy-web-1');
    expect(missing).toEqual({ status: 404, body: errorFixtures[0]?.body });
    const unknownZone = await get('/zones/mars-north1-a/instances', {
      method: 'POST',
      body: JSON.stringify({ ...minimal, name: 'vm-m' }),
    });
    expect((unknownZone.body.error as { message: string }).message).toBe(
      "Invalid value for field 'zone': 'mars-north1-a'. Unknown zone.",
    );
    const badFilter = await get('/aggregated/instances?filter=labels.a%20%3D');
    expect((badFilter.body.error as { message: string }).message).toBe(
      "Invalid value for field 'filter': 'labels.a ='. Invalid list filter expression.",
    );
    const tooMany = await get('/aggregated/instances?maxResults=501');
    expect(tooMany.status).toBe(400);
    const noToken = await fetch(`${base}/zones/us-central1-a/instances/x`);
    const denied = (await noToken.json()) as {
      error: { errors: { reason: string }[]; status: string };
    };
    expect([noToken.status, denied.error.errors[0]?.reason, denied.error.status]).toEqual([
      401,
      'required',
      'UNAUTHENTICATED',
    ]);
  });

  it('filters in both languages: AIP-160 comparisons and eq regular expressions', async () => {
    fx.double.plantInstance('us-central1-b', 'web-1', {
      status: 'RUNNING',
      labels: { role: 'web', tier: 'a' },
    });
    fx.double.plantInstance('us-central1-b', 'web-2', {
      status: 'TERMINATED',
      labels: { role: 'web' },
    });
    fx.double.plantInstance('us-central1-b', 'db-1', { status: 'RUNNING', labels: { role: 'db' } });
    const names = async (filter: string) =>
      (
        (await get(`/zones/us-central1-b/instances?filter=${encodeURIComponent(filter)}`)).body
          .items as { name: string }[] | undefined
      )?.map((i) => i.name) ?? [];
    expect(await names('labels.role = "web"')).toEqual(['web-1', 'web-2']);
    expect(await names('(labels.role = web) (status = RUNNING)')).toEqual(['web-1']);
    expect(await names('labels.role = db OR labels.tier = a')).toEqual(['db-1', 'web-1']);
    expect(await names('labels.tier:*')).toEqual(['web-1']);
    expect(await names('name != web-*')).toEqual(['db-1']);
    expect(await names('name eq ".*\\bweb\\-1\\b.*"')).toEqual(['web-1']);
    expect(await names('name ne web.*')).toEqual(['db-1']);
  });

  it('pages: maxResults per page, every zone on every page, tokens to the end', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const { body } = await get(
        `/aggregated/instances?maxResults=2${token === undefined ? '' : `&pageToken=${token}`}`,
      );
      pages++;
      const items = body.items as Record<
        string,
        { instances?: { name: string }[]; warning?: { code: string } }
      >;
      expect(Object.keys(items).sort()).toEqual(fx.double.zones.map((z) => `zones/${z}`));
      for (const v of Object.values(items)) {
        if (v.instances === undefined) expect(v.warning?.code).toBe('NO_RESULTS_ON_PAGE');
        else seen.push(...v.instances.map((i) => i.name));
      }
      expect(Object.values(items).flatMap((v) => v.instances ?? []).length).toBeLessThanOrEqual(2);
      token = body.nextPageToken as string | undefined;
    } while (token !== undefined);
    expect(seen.sort()).toEqual([...fx.double.instances.keys()].map((k) => k.split('/')[1]).sort());
    expect(pages).toBe(Math.ceil(fx.double.instances.size / 2));
  });

  it('an unreachable zone: an UNREACHABLE warning with partial success, a failed request without', async () => {
    fx.double.isolated.add('us-central1-b');
    try {
      const partial = await get('/aggregated/instances?returnPartialSuccess=true');
      expect(partial.status).toBe(200);
      expect((partial.body.items as Record<string, unknown>)['zones/us-central1-b']).toEqual({
        warning: {
          code: 'UNREACHABLE',
          message: "The scope 'zones/us-central1-b' is unreachable.",
          data: [{ key: 'scope', value: 'zones/us-central1-b' }],
        },
      });
      expect(partial.body.unreachables).toEqual(['zones/us-central1-b']);
      const whole = await get('/aggregated/instances');
      expect(whole.status).toBe(503);
    } finally {
      fx.double.isolated.clear();
    }
  });

  it('self links always name www.googleapis.com, whatever endpoint was asked', async () => {
    fx.double.plantInstance('us-central1-a', 'vm-link', { status: 'RUNNING' });
    const { body } = await get('/zones/us-central1-a/instances/vm-link');
    expect(body.selfLink).toBe(
      `${SELF_LINK_BASE}projects/${fx.double.project}/zones/us-central1-a/instances/vm-link`,
    );
    expect(body.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}-0[78]:00$/);
  });
});
