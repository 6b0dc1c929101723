// Peer: the real @google-cloud/compute client over REST against the Compute API double
// (test/support/compute-double.ts): the provider's behaviour beyond the conformance list, and
// the API calls each operation makes, counted over the wire.
import { BudgetError, type CreateRequest, errorClassOf, isNotFound } from '@proxy-op/contract';
import { createLogSink, createSpanRecorder } from '@proxy-op/providertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { firewallName } from '../src/build.js';
import { quotaFailure, stockoutFailure } from './support/compute-double.js';
import { createGcpFixture, type GcpFixture, tokenClient } from './support/fixture.js';
import { WARM_MS, warmSdk } from './support/sdk.js';

beforeAll(warmSdk, WARM_MS);

const zone = 'us-central1-a';
let n = 0;
function request(patch: Partial<CreateRequest> = {}): CreateRequest {
  n++;
  return {
    name: `proxy-t-${n}`,
    namespace: 'default',
    uid: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    port: 3128,
    cloudInit: new TextEncoder().encode('#cloud-config\nruncmd: [echo hello]\n'),
    placement: { zone, machineType: 'e2-small', image: 'ubuntu-2404' },
    ...patch,
  };
}

/** The requests a call made, as `METHOD what`, query left out. */
async function callsOf(fx: GcpFixture, run: () => Promise<unknown>): Promise<string[]> {
  const from = fx.double.requests.length;
  await run().catch(() => {});
  const p = `/compute/(v1|beta)/projects/${fx.double.project}`;
  return fx.double.requests.slice(from).map((r) =>
    r
      .replace(/\?.*$/, '')
      .replace(new RegExp(p), '')
      .replace(/operation-[^/]+/, '<op>')
      .replace(/proxy-op-[0-9a-f]{16}/, '<rule>')
      .replace(/proxy-t-\d+/, '<name>'),
  );
}

describe('API calls per operation (firewall rule off)', () => {
  let fx: GcpFixture;
  beforeAll(async () => {
    fx = await createGcpFixture({}, { config: { firewall: { enabled: false } } });
  });
  afterAll(() => fx.cleanup?.());

  it('counts each operation’s calls', async () => {
    const p = fx.provider;
    const req = request();
    const id = `zones/${zone}/instances/${req.name}`;
    expect(await callsOf(fx, () => p.create(req))).toEqual([
      `GET /zones/${zone}/instances/<name>`,
      `POST /zones/${zone}/instances`,
    ]);
    expect(await callsOf(fx, () => p.create(req))).toEqual([`GET /zones/${zone}/instances/<name>`]);
    expect(await callsOf(fx, () => p.get(id))).toEqual([`GET /zones/${zone}/instances/<name>`]);
    expect(await callsOf(fx, () => p.listByTag())).toEqual(['GET /aggregated/instances']);
    expect(await callsOf(fx, () => p.check!())).toEqual(['GET /aggregated/instances']);
    expect(await callsOf(fx, () => p.delete(id))).toEqual([
      `GET /zones/${zone}/instances/<name>`,
      `DELETE /zones/${zone}/instances/<name>`,
    ]);
    fx.double.settle();
    expect(await callsOf(fx, () => p.get(id))).toEqual([
      `GET /zones/${zone}/instances/<name>`,
      `GET /zones/${zone}/operations`,
    ]);
    expect(await callsOf(fx, () => p.delete(id))).toEqual([
      `GET /zones/${zone}/instances/<name>`,
      `GET /zones/${zone}/operations`,
    ]);
  });

  it('lists through the beta surface with partial success, filtered on the managed label', async () => {
    const from = fx.double.requests.length;
    await fx.provider.listByTag();
    const url = new URL(`http://x${fx.double.requests[from]?.replace(/^GET /, '')}`);
    expect(url.pathname).toBe(`/compute/beta/projects/${fx.double.project}/aggregated/instances`);
    expect(url.searchParams.get('returnPartialSuccess')).toBe('true');
    expect(url.searchParams.get('maxResults')).toBe('500');
    expect(url.searchParams.get('filter')).toBe('labels.proxy-operator-managed = "true"');
  });

  it('ListByTag follows every page', async () => {
    const paged = await createGcpFixture(
      {},
      { double: { pageCap: 1 }, config: { firewall: { enabled: false } } },
    );
    try {
      const made: string[] = [];
      for (let i = 0; i < 3; i++) made.push(await paged.provider.create(request()));
      const calls = await callsOf(paged, () => paged.provider.listByTag());
      expect(calls).toEqual([
        'GET /aggregated/instances',
        'GET /aggregated/instances',
        'GET /aggregated/instances',
      ]);
      const listed = (await paged.provider.listByTag()).map((x) => x.id).sort();
      expect(listed).toEqual([...made].sort());
    } finally {
      await paged.cleanup?.();
    }
  });
});

describe('API calls per operation (firewall rule on)', () => {
  let fx: GcpFixture;
  beforeAll(async () => {
    fx = await createGcpFixture({});
  });
  afterAll(() => fx.cleanup?.());

  it('adds the rule’s insert to Create and its read and delete to Delete', async () => {
    const p = fx.provider;
    const req = request();
    const id = `zones/${zone}/instances/${req.name}`;
    expect(await callsOf(fx, () => p.create(req))).toEqual([
      `GET /zones/${zone}/instances/<name>`,
      `POST /zones/${zone}/instances`,
      'POST /global/firewalls',
    ]);
    expect(await callsOf(fx, () => p.create(req))).toEqual([
      `GET /zones/${zone}/instances/<name>`,
      'POST /global/firewalls',
      'GET /global/firewalls/<rule>',
    ]);
    expect(await callsOf(fx, () => p.delete(id))).toEqual([
      `GET /zones/${zone}/instances/<name>`,
      `DELETE /zones/${zone}/instances/<name>`,
      'GET /global/firewalls/<rule>',
      'DELETE /global/firewalls/<rule>',
    ]);
    fx.double.settle();
    expect(await callsOf(fx, () => p.delete(id))).toEqual([
      `GET /zones/${zone}/instances/<name>`,
      `GET /zones/${zone}/operations`,
      'GET /global/firewalls/<rule>',
    ]);
  });
});

describe('asynchronous insert failures', () => {
  let fx: GcpFixture;
  beforeAll(async () => {
    fx = await createGcpFixture(
      {},
      { config: { firewall: { enabled: false } }, double: { opMs: 60_000 } },
    );
  });
  afterAll(() => fx.cleanup?.());

  it('a quota failure after acceptance: Transient while the insert runs, then QuotaExceeded with the API’s message', async () => {
    fx.double.insertFailure = { failure: quotaFailure('us-central1'), when: 'later', times: 1 };
    const req = request();
    const id = await fx.provider.create(req);
    const running = await fx.provider.get(id).catch((e) => e);
    expect(errorClassOf(running)).toBe('Transient');
    expect(running.message).toMatch(
      /is being created \(operation operation-\d+-[0-9a-f-]+ is RUNNING\)/,
    );
    fx.double.settle();
    const failed = await fx.provider.get(id).catch((e) => e);
    expect(failed.code).toBe('PROVIDER_QUOTA_EXCEEDED');
    expect(failed.message).toContain(
      `the insert of instance ${req.name} failed (operation operation-`,
    );
    expect(failed.message).toContain(
      "QUOTA_EXCEEDED: Quota 'CPUS' exceeded.  Limit: 8.0 in region us-central1.",
    );
    expect(fx.double.instances.has(`${zone}/${req.name}`)).toBe(false);
    // Delete forgets the failure, so Get reaches NotFound and the Proxy can go.
    await fx.provider.delete(id);
    expect(await fx.provider.get(id).catch(isNotFound)).toBe(true);
    // A Create after the quota was raised makes the instance.
    await fx.provider.create(req);
    expect((await fx.provider.get(id)).uid).toBe(req.uid);
  });

  it('a missing image is Permanent; a zone without capacity is QuotaExceeded', async () => {
    const bad = request({ placement: { zone, machineType: 'e2-small', image: 'debian-12' } });
    fx.double.insertFailure = {
      failure: {
        code: 'RESOURCE_NOT_FOUND',
        message:
          "The resource 'projects/debian-cloud/global/images/family/debian-12' was not found",
        httpStatus: 404,
        httpMessage: 'NOT FOUND',
      },
      when: 'later',
      times: 1,
    };
    const id = await fx.provider.create(bad);
    fx.double.settle();
    const err = await fx.provider.get(id).catch((e) => e);
    expect(errorClassOf(err)).toBe('Permanent');
    expect(err.message).toContain('RESOURCE_NOT_FOUND');

    fx.double.insertFailure = {
      failure: stockoutFailure(zone, 'e2-small'),
      when: 'later',
      times: 1,
    };
    const out = await fx.provider.create(request());
    fx.double.settle();
    expect(errorClassOf(await fx.provider.get(out).catch((e) => e))).toBe('QuotaExceeded');
  });

  it('a failure the insert answers at once fails Create itself, with nothing made', async () => {
    fx.double.insertFailure = { failure: quotaFailure('us-central1'), when: 'accept', times: 1 };
    const req = request();
    const err = await fx.provider.create(req).catch((e) => e);
    expect(err.code).toBe('PROVIDER_QUOTA_EXCEEDED');
    expect(err.op).toBe('create');
    expect(fx.double.instances.has(`${zone}/${req.name}`)).toBe(false);
  });

  it('each captured operation failure is reported by Get with its class', async () => {
    const { operationFixtures } = await import('./support/cases.js');
    for (const f of operationFixtures) {
      const req = request();
      const link = `https://www.googleapis.com/compute/v1/projects/${fx.double.project}/zones/${zone}/instances/${req.name}`;
      fx.double.plantOperation({
        ...f.operation,
        name: `operation-${Date.now()}-${n}`,
        targetLink: link,
      });
      const err = await fx.provider.get(`zones/${zone}/instances/${req.name}`).catch((e) => e);
      expect(errorClassOf(err), f.name).toBe(f.want);
    }
  });
});

describe('Delete while a deletion runs', () => {
  it('a second Delete whose instance is busy with its own deletion succeeds, even when that deletion ends meanwhile', async () => {
    const fx = await createGcpFixture(
      {},
      { config: { firewall: { enabled: false } }, double: { opMs: 60_000 } },
    );
    try {
      const req = request();
      const id = await fx.provider.create(req);
      fx.double.settle();
      await fx.provider.delete(id);
      // The second Delete: instances.get, instances.delete (400 resourceNotReady), then the
      // operations list, held until the first deletion has finished.
      const gate = fx.double.blockCalls(2);
      const second = fx.provider.delete(id);
      await gate.reached;
      fx.double.settle();
      gate.release();
      await expect(second).resolves.toBeUndefined();
      expect(await fx.provider.get(id).catch(isNotFound)).toBe(true);
    } finally {
      await fx.cleanup?.();
    }
  });

  it('an instance busy with something else than its deletion is Transient', async () => {
    const fx = await createGcpFixture({}, { config: { firewall: { enabled: false } } });
    try {
      const id = await fx.provider.create(request());
      fx.double.settle();
      const key = id.replace(/^zones\//, '').replace('/instances/', '/');
      // instances.get answers the instance; instances.delete answers resourceNotReady; the
      // operations list (real) holds no deletion.
      fx.double.answerNext(200, fx.double.instances.get(key));
      fx.double.answerNext(400, {
        error: {
          code: 400,
          message: `The resource 'projects/${fx.double.project}/${id}' is not ready`,
          errors: [
            {
              message: `The resource 'projects/${fx.double.project}/${id}' is not ready`,
              domain: 'global',
              reason: 'resourceNotReady',
            },
          ],
        },
      });
      const err = await fx.provider.delete(id).catch((e) => e);
      expect(errorClassOf(err)).toBe('Transient');
      expect(err.message).toContain('busy with another operation');
      expect(fx.double.instances.has(key)).toBe(true);
    } finally {
      await fx.cleanup?.();
    }
  });
});

describe('internal-IP mode', () => {
  let fx: GcpFixture;
  beforeAll(async () => {
    fx = await createGcpFixture(
      {},
      { config: { addressMode: 'internal', firewall: { enabled: false } } },
    );
  });
  afterAll(() => fx.cleanup?.());

  it('makes no external address and reports the internal one', async () => {
    const id = await fx.provider.create(request());
    fx.double.settle();
    const inst = fx.double.instances.get(
      id.replace(/^zones\//, '').replace('/instances/', '/'),
    ) as {
      networkInterfaces: { accessConfigs?: unknown; networkIP: string }[];
    };
    expect(inst.networkInterfaces[0]?.accessConfigs).toBeUndefined();
    const got = await fx.provider.get(id);
    expect(got.state).toBe('Running');
    expect(got.ip).toBe(inst.networkInterfaces[0]?.networkIP);
    expect(got.ip).toMatch(/^10\.128\.0\.\d+$/);
  });
});

describe('the firewall rule', () => {
  let fx: GcpFixture;
  beforeAll(async () => {
    fx = await createGcpFixture({});
  });
  afterAll(() => fx.cleanup?.());

  it('opens the port to the request’s allowed IPv4 sources, else the config’s', async () => {
    const req = request({
      port: 8080,
      allowedSources: ['192.0.2.0/24', '198.51.100.7', '2001:db8::/32', '192.0.2.0/24'],
    });
    await fx.provider.create(req);
    const rule = fx.double.firewalls.get(firewallName({ zone, name: req.name })) as Record<
      string,
      unknown
    >;
    expect(rule.sourceRanges).toEqual(['192.0.2.0/24', '198.51.100.7/32']);
    expect(rule.allowed).toEqual([{ IPProtocol: 'tcp', ports: ['8080'] }]);
    expect(rule.targetTags).toEqual([firewallName({ zone, name: req.name })]);
    expect(rule.description).toBe(
      `proxy-op rule for zones/${zone}/instances/${req.name}: proxy-operator-managed=true proxy-operator-uid=${req.uid} proxy-operator-installation=default`,
    );
    const plain = request();
    await fx.provider.create(plain);
    const other = fx.double.firewalls.get(firewallName({ zone, name: plain.name })) as Record<
      string,
      unknown
    >;
    expect(other.sourceRanges).toEqual(['203.0.113.0/24']);
  });

  it('refuses a request with no allowed source when the config names none, before any call', async () => {
    const fx2 = await createGcpFixture({}, { config: { firewall: { enabled: true } } });
    try {
      const before = fx2.double.requests.length;
      const err = await fx2.provider.create(request()).catch((e) => e);
      expect(errorClassOf(err)).toBe('Permanent');
      expect(err.message).toContain('neither the request (allowedSources, IPv4)');
      expect(fx2.double.requests.length).toBe(before);
    } finally {
      await fx2.cleanup?.();
    }
  });

  it('replaces a rule of ours whose sources changed, and refuses someone else’s', async () => {
    const req = request();
    await fx.provider.create(req);
    const name = firewallName({ zone, name: req.name });
    (fx.double.firewalls.get(name) as Record<string, unknown>).sourceRanges = ['0.0.0.0/0'];
    const err = await fx.provider.create(req).catch((e) => e);
    expect(errorClassOf(err)).toBe('Transient');
    expect(err.message).toContain('being replaced');
    fx.double.settle();
    expect(fx.double.firewalls.has(name)).toBe(false);
    await fx.provider.create(req);
    expect((fx.double.firewalls.get(name) as Record<string, unknown>).sourceRanges).toEqual([
      '203.0.113.0/24',
    ]);

    (fx.double.firewalls.get(name) as Record<string, unknown>).description = 'made by hand';
    const refused = await fx.provider.create(req).catch((e) => e);
    expect(errorClassOf(refused)).toBe('Permanent');
    expect(refused.message).toContain(`firewall rule ${name}`);
  });

  it('Delete leaves another owner’s rule alone and removes ours with the instance', async () => {
    const req = request();
    const id = await fx.provider.create(req);
    const name = firewallName({ zone, name: req.name });
    await fx.provider.delete(id, { uid: 'someone-else' });
    fx.double.settle();
    expect(fx.double.firewalls.has(name)).toBe(true);
    await fx.provider.delete(id, { uid: req.uid });
    fx.double.settle();
    expect(fx.double.firewalls.has(name)).toBe(false);
    expect(fx.double.disks.has(`${zone}/${req.name}`)).toBe(false);
  });
});

describe('placement, names and cloud-init', () => {
  let fx: GcpFixture;
  beforeAll(async () => {
    fx = await createGcpFixture(
      {},
      {
        config: {
          firewall: { enabled: false },
          zones: ['us-central1-a', 'us-central1-b', 'europe-west1-b'],
        },
      },
    );
  });
  afterAll(() => fx.cleanup?.());

  it('placement.region picks the region’s first configured zone', async () => {
    const id = await fx.provider.create(
      request({
        placement: { region: 'europe-west1', machineType: 'e2-small', image: 'ubuntu-2404' },
      }),
    );
    expect(id).toMatch(/^zones\/europe-west1-b\/instances\//);
    const same = await fx.provider.create(
      request({
        placement: {
          region: 'us-central1',
          zone: 'us-central1-b',
          machineType: 'e2-small',
          image: 'ubuntu-2404',
        },
      }),
    );
    expect(same).toMatch(/^zones\/us-central1-b\//);
  });

  it('refuses, before any call, what Compute Engine would: a name starting with a digit, a UID that is no label value, cloud-init that is not UTF-8 or too large', async () => {
    const before = fx.double.requests.length;
    const cases: [Partial<CreateRequest>, string][] = [
      [{ name: '1st-proxy' }, 'name "1st-proxy"'],
      [{ uid: 'UID-With-Capitals' }, 'uid "UID-With-Capitals" is not a Compute Engine label value'],
      [{ cloudInit: new Uint8Array([0xff, 0xfe, 0x00]) }, 'cloudInit is not UTF-8 text'],
      [{ cloudInit: new Uint8Array(256 * 1024 + 1).fill(0x41) }, 'holds at most 262144'],
    ];
    for (const [patch, text] of cases) {
      const err = await fx.provider.create(request(patch)).catch((e) => e);
      expect(errorClassOf(err), text).toBe('Permanent');
      expect(err.message).toContain(text);
    }
    expect(fx.double.requests.length).toBe(before);
  });

  it('passes cloud-init byte for byte as user-data', async () => {
    const text = '#cloud-config\nwrite_files:\n  - content: "héllo ✓\\n"\n    path: /tmp/x\n';
    const req = request({ cloudInit: new TextEncoder().encode(text) });
    await fx.provider.create(req);
    const inst = fx.double.instances.get(`${zone}/${req.name}`) as {
      metadata: { items: { key: string; value: string }[] };
    };
    expect(inst.metadata.items).toEqual([{ key: 'user-data', value: text }]);
  });
});

describe('logs and spans', () => {
  it('one child span per API call under the operation span, named gcp.<call>', async () => {
    const spans = createSpanRecorder();
    const fx = await createGcpFixture(
      { tracer: spans.tracer },
      { config: { firewall: { enabled: false } } },
    );
    try {
      const id = await fx.provider.create(request());
      await fx.provider.get(id);
      const all = spans.spans();
      const create = all.find((s) => s.name === 'provider.create');
      const children = all.filter(
        (s) => s.parentSpanContext?.spanId === create?.spanContext().spanId,
      );
      expect(children.map((s) => s.name)).toEqual(['gcp.getInstance', 'gcp.insertInstance']);
      expect(children[1]?.attributes).toEqual({ zone, name: id.split('/')[3] });
    } finally {
      await fx.cleanup?.();
    }
  });

  it('the wire log: one trace line per call; bodies only with logPayloads, the user-data elided', async () => {
    const secret = 'CLOUDINIT-SECRET-7c1e';
    for (const logPayloads of [false, true]) {
      const logs = createLogSink();
      const fx = await createGcpFixture(
        { logger: logs.logger },
        { config: { logPayloads, firewall: { enabled: false } } },
      );
      try {
        const req = request({
          cloudInit: new TextEncoder().encode(`#cloud-config\n# ${secret}\n`),
        });
        await fx.provider.create(req);
        const wire = logs.lines.filter((l) => l.msg === 'gcp request');
        expect(wire.map((l) => [l.level, l.fields.call])).toEqual([
          ['trace', 'getInstance'],
          ['trace', 'insertInstance'],
        ]);
        const body = wire[1]?.fields.body as { metadata?: { items: unknown[] } } | undefined;
        if (logPayloads) {
          expect(body?.metadata?.items).toEqual([
            { key: 'user-data', value: `<${req.cloudInit.byteLength} bytes elided>` },
          ]);
        } else {
          expect(body).toBeUndefined();
        }
        expect(logs.text()).not.toContain(secret);
        const calls = logs.lines.filter((l) => l.msg === 'gcp call');
        expect(calls.map((l) => l.level)).toEqual(['debug', 'debug']);
        expect(calls[1]?.fields).toMatchObject({ call: 'insertInstance', zone, name: req.name });
      } finally {
        await fx.cleanup?.();
      }
    }
  });

  it('a failed call’s debug line carries the HTTP status and reasons, not the message', async () => {
    const logs = createLogSink();
    const fx = await createGcpFixture(
      { logger: logs.logger },
      { config: { firewall: { enabled: false } } },
    );
    try {
      fx.double.denied.add('compute.instances.get');
      await fx.provider.get(`zones/${zone}/instances/proxy-x`).catch(() => {});
      const line = logs.lines.find((l) => l.msg === 'gcp call');
      expect(line?.fields).toMatchObject({
        call: 'getInstance',
        httpStatus: 403,
        reasons: 'forbidden',
        error: 'ComputeApiError',
      });
      expect(JSON.stringify(line?.fields)).not.toContain('Required');
    } finally {
      await fx.cleanup?.();
    }
  });
});

describe('close', () => {
  it('closes every SDK client it built; calls after it fail without a request', async () => {
    const compute = await import('@google-cloud/compute');
    const closes = [
      vi.spyOn(compute.InstancesClient.prototype, 'close'),
      vi.spyOn(compute.v1beta.InstancesClient.prototype, 'close'),
      vi.spyOn(compute.ZoneOperationsClient.prototype, 'close'),
      vi.spyOn(compute.FirewallsClient.prototype, 'close'),
    ];
    const fx = await createGcpFixture({}, { config: { firewall: { enabled: false } } });
    try {
      const id = await fx.provider.create(request());
      await fx.provider.listByTag();
      await fx.provider.close?.();
      // Built: instances (v1), the listing (v1beta); never built: operations, firewalls.
      expect(closes.map((c) => c.mock.calls.length)).toEqual([1, 1, 0, 0]);
      const err = await fx.provider.get(id).catch((e) => e);
      expect(errorClassOf(err)).toBe('Transient');
      expect(err.message).toContain('closed');
      const before = fx.double.requests.length;
      await fx.provider.listByTag().catch(() => {});
      expect(fx.double.requests.length).toBe(before);
      await fx.provider.close?.();
      expect(closes.map((c) => c.mock.calls.length)).toEqual([1, 1, 0, 0]);
    } finally {
      for (const c of closes) c.mockRestore();
      await fx.double.close();
    }
  });
});

describe('budgets', () => {
  it('a call past its budget, or cancelled, is aborted: the BudgetError is the cause, the request is hung up', async () => {
    const fx = await createGcpFixture(
      {},
      { config: { firewall: { enabled: false }, timeouts: { readMs: 3000, writeMs: 3000 } } },
    );
    try {
      // Builds the clients of Get (instances, zone operations) before the budget counts.
      await fx.provider.get(`zones/${zone}/instances/x3`).catch(() => {});
      const gate = fx.double.blockCalls(0);
      try {
        const err = await fx.provider.get(`zones/${zone}/instances/x3`).catch((e) => e);
        expect(errorClassOf(err)).toBe('Transient');
        expect(err.cause).toBeInstanceOf(BudgetError);
        expect(err.cause).toMatchObject({ call: 'getInstance', budgetMs: 3000 });
        await vi.waitFor(() => expect(fx.double.hungUp).toBe(1), { timeout: 5_000 });
        // The caller's signal, joined with the budget, reaches the request too: hung up well
        // before the budget.
        const t0 = performance.now();
        const cancelled = await fx.provider
          .get(`zones/${zone}/instances/x3`, { signal: AbortSignal.timeout(100) })
          .catch((e) => e);
        expect(errorClassOf(cancelled)).toBe('Transient');
        await vi.waitFor(() => expect(fx.double.hungUp).toBe(2), { timeout: 5_000 });
        expect(performance.now() - t0).toBeLessThan(2500);
      } finally {
        gate.release();
      }
    } finally {
      await fx.cleanup?.();
    }
  });
});

describe('credentials', () => {
  it('a token the API refuses is Permanent, and Check says Unauthorized', async () => {
    const fx = await createGcpFixture({}, { config: { firewall: { enabled: false } } });
    try {
      fx.auth.setCredentials(tokenClient('ya29.revoked').credentials);
      const err = await fx.provider.listByTag().catch((e) => e);
      expect(errorClassOf(err)).toBe('Permanent');
      expect(err.message).toContain('Request had invalid authentication credentials');
      expect((await fx.provider.check!())[0]?.reason).toBe('Unauthorized');
    } finally {
      await fx.cleanup?.();
    }
  });

  it('a token source that never answers: the signal and the budget still end the call', async () => {
    const fx = await createGcpFixture(
      {},
      { config: { firewall: { enabled: false }, timeouts: { readMs: 3000, writeMs: 3000 } } },
    );
    try {
      fx.auth.getAccessToken = () => new Promise(() => {});
      const t0 = performance.now();
      const cancelled = await fx.provider
        .get(`zones/${zone}/instances/x2`, { signal: AbortSignal.timeout(50) })
        .catch((e) => e);
      expect(errorClassOf(cancelled)).toBe('Transient');
      // Well before the 3000 ms budget: the signal ended it, not the budget.
      expect(performance.now() - t0).toBeLessThan(2000);
      const late = await fx.provider.get(`zones/${zone}/instances/x2`).catch((e) => e);
      expect(errorClassOf(late)).toBe('Transient');
      expect(late.message).toBe('getInstance did not answer within 3000 ms');
      expect(late.cause).toBeInstanceOf(BudgetError);
      expect(late.cause).toMatchObject({ call: 'getInstance', budgetMs: 3000 });
      const [timedOut] = await fx.provider.check!();
      expect(timedOut?.reason).toBe('Timeout');
      // A target that ran out of time still reports its config facts.
      expect(timedOut?.details).toEqual({
        project: fx.double.project,
        endpoint: fx.double.url,
        zones: 'us-central1-a,us-central1-b',
      });
    } finally {
      await fx.cleanup?.();
    }
  });

  it('no credentials at all: CredentialsUnavailable, and Transient from the operations', async () => {
    const fx = await createGcpFixture({}, { config: { firewall: { enabled: false } } });
    try {
      fx.auth.getAccessToken = async () => {
        throw new Error(
          'Could not load the default credentials. Browse to https://cloud.google.com/docs/authentication/getting-started for more information.',
        );
      };
      const before = fx.double.requests.length;
      const [r] = await fx.provider.check!();
      expect(r?.reason).toBe('CredentialsUnavailable');
      expect(
        errorClassOf(await fx.provider.get(`zones/${zone}/instances/x1`).catch((e) => e)),
      ).toBe('Transient');
      expect(fx.double.requests.length).toBe(before);
    } finally {
      await fx.cleanup?.();
    }
  });
});

describe('Spot instances', () => {
  it('taken back with the DELETE action: Preempted while Compute Engine stops it, then NotFound', async () => {
    const fx = await createGcpFixture(
      {},
      {
        config: {
          firewall: { enabled: false },
          scheduling: { provisioningModel: 'SPOT', instanceTerminationAction: 'DELETE' },
        },
        double: { opMs: 300 },
      },
    );
    try {
      const req = request();
      const id = await fx.provider.create(req);
      fx.double.settle();
      const key = `${zone}/${req.name}`;
      const inst = fx.double.instances.get(key) as { scheduling: Record<string, unknown> };
      expect(inst.scheduling).toMatchObject({
        provisioningModel: 'SPOT',
        instanceTerminationAction: 'DELETE',
      });
      expect((await fx.provider.get(id)).state).toBe('Running');
      fx.double.preempt(key);
      const taken = await fx.provider.get(id);
      expect(taken.state).toBe('Preempted');
      expect(taken.ip).toBeUndefined();
      expect(taken.location).toEqual({ region: 'us-central1', zone, country: 'US' });
      await expect.poll(() => fx.provider.get(id).catch(isNotFound), { timeout: 5000 }).toBe(true);
      // A Standard instance is never taken back.
      fx.double.plantInstance(zone, 'standard-1', { status: 'RUNNING', natIP: '198.51.100.20' });
      expect(() => fx.double.preempt(`${zone}/standard-1`)).toThrow(/Spot ones only/);
    } finally {
      await fx.cleanup?.();
    }
  });
});
