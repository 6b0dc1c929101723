// Peer: none; the pure parts of the provider (config, IDs, labels, state, builders, error
// translation) on their own.
import { type AddressInfo, createServer } from 'node:net';
import { ConfigError, createProvider, locationProblems, validateConfig } from '@proxy-op/contract';
import { describe, expect, it } from 'vitest';
import { instanceView } from '../src/answers.js';
import { buildFirewallBody, buildInsertBody, firewallMark, firewallName } from '../src/build.js';
import { operationErrorClass } from '../src/classify.js';
import { endpointParts, regionOf, UBUNTU_2404 } from '../src/config.js';
import {
  CONFIG_DEFAULTS,
  ComputeApiError,
  configSchema,
  type GcpConfig,
  parseId,
  providerModule,
} from '../src/index.js';
import { labelValueProblem, markLabels } from '../src/labels.js';
import { REGION_COUNTRY } from '../src/regions.js';
import { elideUserData, seamFields } from '../src/seam.js';
import { addressOf, isDownSpot, locationOf, mapState, stateOf } from '../src/state.js';
import { translate } from '../src/translate.js';

const config = async (block: Record<string, unknown>): Promise<GcpConfig> =>
  validateConfig(configSchema, block, 'gcp');

describe('config', () => {
  it('fills every default from one object', async () => {
    const c = await config({ project: 'my-project-1', zones: ['us-central1-a'] });
    expect(c).toEqual({
      project: 'my-project-1',
      zones: ['us-central1-a'],
      ...CONFIG_DEFAULTS,
      subnetwork: undefined,
      credentialsFile: undefined,
    });
    expect(c.images).toEqual({ 'ubuntu-2404': UBUNTU_2404 });
  });

  it('names the path of every problem at once', async () => {
    const err = await config({
      zones: ['us-central1', 'us-central1-a', 'us-central1-a'],
      images: { Ubuntu: 'ubuntu' },
      diskSizeGb: 5,
      addressMode: 'public',
      firewall: { enabled: 'yes', sourceRanges: ['0.0.0.0/33'], extra: 1 },
      endpoint: 'https://compute.googleapis.com/compute/v1/',
      timeouts: { readMs: 0 },
      scheduling: { provisioningModel: 'spot', instanceTerminationAction: 'KEEP', extra: 1 },
      colour: 'blue',
    }).catch((e) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([
      'gcp.colour: unknown field; expected one of project, zones, machineTypes, images, network, subnetwork, networkTag, diskSizeGb, diskType, addressMode, firewall, scheduling, endpoint, credentialsFile, timeouts, logPayloads',
      'gcp.project: is required',
      'gcp.zones[0]: "us-central1" is not a zone name (us-central1-a)',
      'gcp.zones[2]: "us-central1-a" is listed twice',
      'gcp.images.Ubuntu: the key is not a lowercase DNS label',
      'gcp.diskSizeGb: must be an integer of at least 10',
      'gcp.addressMode: must be "external" or "internal"',
      'gcp.firewall.extra: unknown field; expected enabled, sourceRanges, priority',
      'gcp.firewall.enabled: must be a boolean',
      'gcp.firewall.sourceRanges[0]: "0.0.0.0/33" has a prefix length that is not 0 to 32',
      'gcp.scheduling.extra: unknown field; expected provisioningModel, instanceTerminationAction',
      'gcp.scheduling.provisioningModel: must be "STANDARD" or "SPOT"',
      'gcp.scheduling.instanceTerminationAction: must be "STOP" or "DELETE"',
      'gcp.endpoint: "https://compute.googleapis.com/compute/v1/" must have no path, query or fragment (the client adds /compute/v1/)',
      'gcp.timeouts.readMs: must be a whole number of milliseconds above zero',
    ]);
  });

  it('provisions Standard instances unless Spot is asked for, and stops taken-back Spot ones by default', async () => {
    const base = { project: 'proxies-1', zones: ['europe-west3-a'] };
    expect((await config(base)).scheduling).toEqual({
      provisioningModel: 'STANDARD',
      instanceTerminationAction: 'STOP',
    });
    expect(
      (await config({ ...base, scheduling: { provisioningModel: 'SPOT' } })).scheduling,
    ).toEqual({ provisioningModel: 'SPOT', instanceTerminationAction: 'STOP' });
    const del = await config({
      ...base,
      scheduling: { provisioningModel: 'SPOT', instanceTerminationAction: 'DELETE' },
    });
    expect(del.scheduling.instanceTerminationAction).toBe('DELETE');
    const err = await config({
      ...base,
      scheduling: { instanceTerminationAction: 'DELETE' },
    }).catch((e) => e);
    expect((err as ConfigError).problems).toEqual([
      'gcp.scheduling.instanceTerminationAction: applies to Spot instances only; set provisioningModel to "SPOT" or leave it out',
    ]);
  });

  it('takes full network paths, images by name or family, domain-scoped projects', async () => {
    const c = await config({
      project: 'example.com:proxies-1',
      zones: ['europe-west4-b'],
      network: 'projects/host-project/global/networks/shared',
      subnetwork: 'projects/host-project/regions/europe-west4/subnetworks/proxies',
      images: {
        pinned: 'projects/ubuntu-os-cloud/global/images/ubuntu-2404-noble-amd64-v20251001',
      },
    });
    expect(c.network).toBe('projects/host-project/global/networks/shared');
    expect(c.images.pinned).toMatch(/v20251001$/);
  });

  it('building a provider makes no connection', async () => {
    let connections = 0;
    const server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    try {
      const p = await createProvider(
        providerModule,
        'gcp-1',
        { project: 'my-project-1', zones: ['us-central1-a'], endpoint: `http://127.0.0.1:${port}` },
        {},
      );
      expect(p.type).toBe('gcp');
      await p.close?.();
      await new Promise((r) => setTimeout(r, 50));
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });
});

describe('IDs, labels, regions', () => {
  it('parses zones/<zone>/instances/<name> strictly', () => {
    expect(parseId('zones/us-central1-a/instances/proxy-1')).toEqual({
      zone: 'us-central1-a',
      name: 'proxy-1',
    });
    for (const bad of [
      'zones/us-central1-a/instances/1proxy',
      'zones/US-central1-a/instances/p',
      'zones/us-central1/instances/p',
      'regions/us-central1-a/instances/p',
      'zones/us-central1-a/instances/p/x',
    ]) {
      expect(parseId(bad), bad).toBeUndefined();
    }
  });

  it('label values: lowercase letters, digits, _ and -, at most 63; the managed value is true', () => {
    expect(labelValueProblem('6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11')).toBeUndefined();
    expect(labelValueProblem('')).toBeUndefined();
    expect(labelValueProblem('2020-07-31T19:20:20Z')).toContain('not a Compute Engine label value');
    expect(labelValueProblem('a'.repeat(64))).toBeDefined();
    expect(markLabels({ uid: 'u-1', installation: 'default' })).toEqual({
      'proxy-operator-managed': 'true',
      'proxy-operator-uid': 'u-1',
      'proxy-operator-installation': 'default',
    });
  });

  it('regions and endpoints', () => {
    expect(regionOf('northamerica-northeast1-a')).toBe('northamerica-northeast1');
    expect(endpointParts('https://compute.googleapis.com')).toEqual({
      host: 'compute.googleapis.com',
      port: 443,
      protocol: 'https',
    });
    expect(endpointParts('http://127.0.0.1:8080')).toEqual({
      host: '127.0.0.1',
      port: 8080,
      protocol: 'http',
    });
  });
});

describe('state and addresses', () => {
  it('maps every status', () => {
    const table: [string, string | undefined, string][] = [
      ['PROVISIONING', undefined, 'Provisioning'],
      ['STAGING', '34.1.2.3', 'Provisioning'],
      ['REPAIRING', undefined, 'Provisioning'],
      ['RUNNING', undefined, 'Provisioning'],
      ['RUNNING', '34.1.2.3', 'Running'],
      ['STOPPING', '34.1.2.3', 'Stopped'],
      ['STOPPED', undefined, 'Stopped'],
      ['SUSPENDING', undefined, 'Stopped'],
      ['SUSPENDED', undefined, 'Stopped'],
      ['DEPROVISIONING', undefined, 'Stopped'],
      ['TERMINATED', undefined, 'Terminated'],
      ['SOMETHING_NEW', '34.1.2.3', 'Stopped'],
    ];
    for (const [status, ip, want] of table) expect(mapState(status, ip), status).toBe(want);
  });

  it('reads the NAT address or the internal one, IPv4 only', () => {
    const inst = instanceView(
      {
        name: 'p',
        status: 'RUNNING',
        zone: 'https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a',
        networkInterfaces: [{ networkIP: '10.128.0.5', accessConfigs: [{ natIP: '34.70.1.2' }] }],
      },
      undefined,
      'test',
    );
    expect(inst.zone).toBe('us-central1-a');
    expect(addressOf(inst, 'external')).toBe('34.70.1.2');
    expect(addressOf(inst, 'internal')).toBe('10.128.0.5');
    expect(
      addressOf(
        { ...inst, networkInterfaces: [{ networkIP: 'fd20::5', natIP: undefined }] },
        'internal',
      ),
    ).toBeUndefined();
  });

  it('reads a Spot instance that is down as Preempted only when Compute Engine took it back', () => {
    const spot = instanceView(
      { name: 'p', status: 'TERMINATED', scheduling: { provisioningModel: 'SPOT' } },
      'us-central1-a',
      'test',
    );
    expect(spot.provisioningModel).toBe('SPOT');
    expect(isDownSpot(spot)).toBe(true);
    expect(stateOf(spot, undefined, true)).toBe('Preempted');
    expect(stateOf(spot, undefined, false), 'stopped by someone else').toBe('Terminated');
    expect(stateOf({ ...spot, status: 'STOPPING' }, undefined, true)).toBe('Preempted');
    expect(stateOf({ ...spot, status: 'RUNNING' }, '34.1.2.3', true), 'running again').toBe(
      'Running',
    );
    const standard = instanceView({ name: 'p', status: 'TERMINATED' }, 'us-central1-a', 'test');
    expect(standard.provisioningModel).toBe('STANDARD');
    expect(isDownSpot(standard)).toBe(false);
    expect(stateOf(standard, undefined, true)).toBe('Terminated');
  });

  it("places an instance in its zone, the zone's region and the region's country", () => {
    expect(locationOf('europe-west3-c')).toEqual({
      region: 'europe-west3',
      zone: 'europe-west3-c',
      country: 'DE',
    });
    expect(locationOf('us-central1-a')).toEqual({
      region: 'us-central1',
      zone: 'us-central1-a',
      country: 'US',
    });
    expect(locationOf('mars-north1-a'), 'a region not in the table').toEqual({
      region: 'mars-north1',
      zone: 'mars-north1-a',
    });
    for (const [region, country] of Object.entries(REGION_COUNTRY)) {
      expect(locationProblems(locationOf(`${region}-a`)), region).toEqual([]);
      expect(country).toMatch(/^[A-Z]{2}$/);
    }
  });

  it('refuses an answer that is not an instance', () => {
    expect(() => instanceView({}, 'z', 'instances.get')).toThrow(TypeError);
    expect(() =>
      instanceView({ name: 'p', status: 'RUNNING', labels: { a: 1 } }, 'z', 'instances.get'),
    ).toThrow(TypeError);
  });
});

describe('builders', () => {
  it('the insert body: one NIC with external NAT, an auto-deleted boot disk, the mark, the user-data', async () => {
    const c = await config({
      project: 'my-project-1',
      zones: ['us-central1-a'],
      subnetwork: 'proxies',
      diskSizeGb: 20,
    });
    const body = buildInsertBody(c, {
      id: { zone: 'us-central1-a', name: 'proxy-1' },
      uid: 'u-1',
      installation: 'default',
      machineType: 'e2-small',
      image: UBUNTU_2404,
      userData: '#cloud-config\n',
      firewallTag: 'proxy-op-0123456789abcdef',
    });
    expect(body).toEqual({
      name: 'proxy-1',
      machineType: 'zones/us-central1-a/machineTypes/e2-small',
      labels: {
        'proxy-operator-managed': 'true',
        'proxy-operator-uid': 'u-1',
        'proxy-operator-installation': 'default',
      },
      tags: { items: ['proxy-op', 'proxy-op-0123456789abcdef'] },
      metadata: { items: [{ key: 'user-data', value: '#cloud-config\n' }] },
      disks: [
        {
          boot: true,
          autoDelete: true,
          initializeParams: {
            sourceImage: UBUNTU_2404,
            diskSizeGb: '20',
            diskType: 'zones/us-central1-a/diskTypes/pd-balanced',
            labels: {
              'proxy-operator-managed': 'true',
              'proxy-operator-uid': 'u-1',
              'proxy-operator-installation': 'default',
            },
          },
        },
      ],
      networkInterfaces: [
        {
          network: 'projects/my-project-1/global/networks/default',
          subnetwork: 'projects/my-project-1/regions/us-central1/subnetworks/proxies',
          accessConfigs: [{ name: 'External NAT', type: 'ONE_TO_ONE_NAT' }],
        },
      ],
    });
    const internal = buildInsertBody(
      { ...c, addressMode: 'internal' },
      {
        id: { zone: 'us-central1-a', name: 'p' },
        uid: '',
        installation: 'default',
        machineType: 'e2-small',
        image: UBUNTU_2404,
        userData: '',
      },
    );
    expect(internal.networkInterfaces[0]?.accessConfigs).toBeUndefined();
    expect(internal.scheduling, 'a Standard instance takes the API defaults').toBeUndefined();
    const spot = buildInsertBody(
      { ...c, scheduling: { provisioningModel: 'SPOT', instanceTerminationAction: 'DELETE' } },
      {
        id: { zone: 'us-central1-a', name: 'p' },
        uid: '',
        installation: 'default',
        machineType: 'e2-small',
        image: UBUNTU_2404,
        userData: '',
      },
    );
    expect(spot.scheduling).toEqual({
      provisioningModel: 'SPOT',
      instanceTerminationAction: 'DELETE',
      automaticRestart: false,
      onHostMaintenance: 'TERMINATE',
    });
  });

  it('the firewall rule: a stable name per zone and instance, its mark in the description', async () => {
    const c = await config({
      project: 'my-project-1',
      zones: ['us-central1-a'],
      firewall: { priority: 900 },
    });
    const id = { zone: 'us-central1-a', name: 'proxy-1' };
    expect(firewallName(id)).toMatch(/^proxy-op-[0-9a-f]{16}$/);
    expect(firewallName(id)).toBe(firewallName({ ...id }));
    expect(firewallName(id)).not.toBe(firewallName({ zone: 'us-central1-b', name: 'proxy-1' }));
    const rule = buildFirewallBody(c, id, { uid: 'u-1', installation: 'inst-a' }, 3128, [
      '192.0.2.0/24',
    ]);
    expect(rule).toMatchObject({
      priority: 900,
      direction: 'INGRESS',
      sourceRanges: ['192.0.2.0/24'],
      targetTags: [firewallName(id)],
      allowed: [{ IPProtocol: 'tcp', ports: ['3128'] }],
    });
    expect(firewallMark(rule.description)).toMatchObject({ uid: 'u-1', installation: 'inst-a' });
    expect(firewallMark('a rule made by hand')).toBeUndefined();
  });

  it('the wire log elides user-data, and names calls by safe identifiers only', () => {
    const body = {
      name: 'p',
      metadata: {
        items: [
          { key: 'user-data', value: 'héllo' },
          { key: 'other', value: 'x' },
        ],
      },
    };
    expect(elideUserData(body)).toEqual({
      name: 'p',
      metadata: {
        items: [
          { key: 'user-data', value: '<6 bytes elided>' },
          { key: 'other', value: 'x' },
        ],
      },
    });
    expect(seamFields('insertInstance', ['us-central1-a', body])).toEqual({
      zone: 'us-central1-a',
      name: 'p',
    });
    expect(
      seamFields('listInstanceOperations', [
        'us-central1-a',
        'https://x/zones/us-central1-a/instances/p',
      ]),
    ).toEqual({ zone: 'us-central1-a', name: 'p' });
    expect(seamFields('listInstances', ['labels.a = "b"'])).toEqual({});
  });
});

describe('errors', () => {
  it('operation failures: quota and capacity, temporary, the rest by HTTP status', () => {
    expect(operationErrorClass('QUOTA_EXCEEDED', 403)).toBe('QuotaExceeded');
    expect(operationErrorClass('ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS', 503)).toBe(
      'QuotaExceeded',
    );
    expect(operationErrorClass('RESOURCE_NOT_READY', 400)).toBe('Transient');
    expect(operationErrorClass('RESOURCE_NOT_FOUND', 404)).toBe('Permanent');
    expect(operationErrorClass('RESOURCE_ALREADY_EXISTS', 409)).toBe('Transient');
    expect(operationErrorClass('SOMETHING', 500)).toBe('Transient');
    expect(operationErrorClass('SOMETHING', undefined)).toBe('Transient');
  });

  it('translate keeps status, reasons and the API message, and drops the client’s error', () => {
    const raw = Symbol.for('google-gax.rawHttpResponsePayload');
    const clientError = Object.assign(new Error('decoded message'), {
      code: 7,
      httpStatusCode: 403,
      cause: { config: { data: 'the request body with user-data' } },
    });
    Object.defineProperty(clientError, raw, {
      value: JSON.stringify({
        error: {
          code: 403,
          message: 'Rate Limit Exceeded',
          status: 'PERMISSION_DENIED',
          errors: [{ reason: 'rateLimitExceeded' }],
        },
      }),
    });
    const t = translate(clientError, 1000) as ComputeApiError;
    expect(t).toBeInstanceOf(ComputeApiError);
    expect([t.message, t.httpStatus, t.grpcCode, t.reasons, t.status]).toEqual([
      'Rate Limit Exceeded',
      403,
      7,
      ['rateLimitExceeded'],
      'PERMISSION_DENIED',
    ]);
    expect((t as { cause?: unknown }).cause).toBeUndefined();
    const timeout = translate(
      Object.assign(new Error('Deadline exceeded'), { code: 4 }),
      250,
    ) as ComputeApiError;
    expect(timeout.message).toBe('no answer within 250 ms');
    expect(
      translate(
        Object.assign(new Error('x'), { code: 14, cause: new SyntaxError('Unexpected token <') }),
        1,
      ),
    ).toBeInstanceOf(SyntaxError);
  });
});
