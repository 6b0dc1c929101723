// Peer: none. The pure parts: the config schema and its defaults (held to the README's table),
// IDs, labels, the state mapping, what Get reports beside the state, the firewall's name, sources
// and rules, the client's reading of answers, the seam's fields and budgets.
import { readFileSync } from 'node:fs';
import { ConfigError, createProvider, MarkKey } from '@proxy-op/contract';
import { describe, expect, it } from 'vitest';
import { readServer } from '../src/answers.js';
import { apiErrorOf, rateLimitOf } from '../src/client.js';
import { errorFields, HetznerApiError, TransportError } from '../src/errors.js';
import { asCidr, firewallName, firewallRules, sameRules } from '../src/firewall.js';
import { CONFIG_DEFAULTS, formatId, parseId, providerModule } from '../src/index.js';
import { labelValueProblem, readMark } from '../src/labels.js';
import { callBudget, elideUserData, seamFields } from '../src/seam.js';
import { ipv6RangeOf, locationOf, mapState } from '../src/state.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

const validate = (input: unknown) => providerModule.configSchema['~standard'].validate(input);

describe('config', () => {
  it('fills every default in one place', () => {
    const r = validate({ tokenFile: '/t', locations: ['fsn1'] });
    expect('value' in r && r.value).toEqual({
      tokenFile: '/t',
      locations: ['fsn1'],
      ...CONFIG_DEFAULTS,
    });
    expect(Object.isFrozen(CONFIG_DEFAULTS)).toBe(true);
  });

  it('names the path of every problem, all at once', async () => {
    const err = await createProvider(
      providerModule,
      'hz',
      {
        locations: ['fsn1', 'Fsn1', 'fsn1'],
        serverTypes: [],
        images: { 'Ubuntu!': 'ubuntu-24.04', ok: 'has space' },
        sshKeys: ['a b'],
        firewall: { enabled: 'yes', sourceRanges: ['10.0.0.0/33'], extra: 1 },
        endpoint: 'ftp://api',
        timeouts: { readMs: 0, later: 1 },
        logPayloads: 'no',
        zones: [],
      },
      {},
    ).catch((e) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([
      'hetzner.zones: unknown field; expected one of tokenFile, locations, serverTypes, images, sshKeys, firewall, endpoint, timeouts, logPayloads',
      'hetzner.tokenFile: is required',
      'hetzner.locations[1]: "Fsn1" is not a location name (fsn1)',
      'hetzner.locations[2]: "fsn1" is listed twice',
      'hetzner.serverTypes: must be a non-empty list of a server type name (cx23)',
      'hetzner.sshKeys[0]: "a b" is not an SSH key name or ID',
      'hetzner.images.Ubuntu!: the key is not a lowercase name',
      'hetzner.images.ok: "has space" is not an image name (ubuntu-24.04) or ID',
      'hetzner.firewall.extra: unknown field; expected enabled, sourceRanges',
      'hetzner.firewall.enabled: must be a boolean',
      'hetzner.firewall.sourceRanges[0]: "10.0.0.0/33" has a prefix length that is not 0 to 32',
      'hetzner.endpoint: "ftp://api" must be an http or https URL',
      'hetzner.timeouts.later: unknown field; expected readMs, writeMs, pollMs, deleteWaitMs',
      'hetzner.timeouts.readMs: must be a whole number of milliseconds above zero',
      'hetzner.logPayloads: must be a boolean',
    ]);
  });

  it('the README config table says every default', () => {
    const row = (field: string) => README.split('\n').find((l) => l.startsWith(`| \`${field}\` |`));
    expect(row('serverTypes')).toContain(
      CONFIG_DEFAULTS.serverTypes.map((t) => `\`${t}\``).join(', '),
    );
    expect(row('images')).toContain('`ubuntu-24.04`');
    expect(row('endpoint')).toContain(`\`${CONFIG_DEFAULTS.endpoint}\``);
    expect(row('firewall.enabled')).toContain(`\`${CONFIG_DEFAULTS.firewall.enabled}\``);
    for (const [k, v] of Object.entries(CONFIG_DEFAULTS.timeouts)) {
      expect(row(`timeouts.${k}`), k).toContain(`| ${v} |`);
    }
    expect(row('logPayloads')).toContain(`\`${CONFIG_DEFAULTS.logPayloads}\``);
  });
});

describe('IDs and labels', () => {
  it('formats and parses servers/<name> strictly', () => {
    expect(formatId({ name: 'proxy-a' })).toBe('servers/proxy-a');
    expect(parseId('servers/proxy-a')).toEqual({ name: 'proxy-a' });
    for (const bad of ['servers/', 'servers/Proxy', 'server/proxy', 'servers/a/b', 'servers/-a']) {
      expect(parseId(bad), bad).toBeUndefined();
    }
  });

  it('takes label values as the API does', () => {
    for (const ok of ['', 'a', '6c1d5f0e-2b7a-4c0e-9d43-1f0a5e2b9c11', 'A.b_c-9', 'x'.repeat(63)]) {
      expect(labelValueProblem(ok), ok).toBeUndefined();
    }
    for (const bad of ['-a', 'a-', 'a b', 'x'.repeat(64), '2026-12-01T10:00:00Z']) {
      expect(labelValueProblem(bad), bad).toBeDefined();
    }
  });

  it('reads the mark with the server’s own creation time; no installation label is the default one', () => {
    const mark = readMark(
      { [MarkKey.Managed]: 'true', [MarkKey.Uid]: 'u-1' },
      '2016-01-30T23:50:00+00:00',
    );
    expect(mark).toEqual({
      uid: 'u-1',
      installation: 'default',
      createdAt: new Date('2016-01-30T23:50:00Z'),
    });
    expect(readMark({ [MarkKey.Uid]: 'u-1' }, undefined)).toBeUndefined();
  });
});

describe('state, address, range and location', () => {
  it('maps every status of the API, and anything else to Stopped', () => {
    const ip = '203.0.113.1';
    expect(
      Object.fromEntries(
        [
          'initializing',
          'starting',
          'running',
          'stopping',
          'off',
          'deleting',
          'migrating',
          'rebuilding',
          'unknown',
          'hibernated',
        ].map((s) => [s, mapState(s, ip)]),
      ),
    ).toEqual({
      initializing: 'Provisioning',
      starting: 'Provisioning',
      running: 'Running',
      stopping: 'Stopped',
      off: 'Stopped',
      deleting: 'Terminated',
      migrating: 'Provisioning',
      rebuilding: 'Provisioning',
      unknown: 'Stopped',
      hibernated: 'Stopped',
    });
    expect(mapState('running', undefined)).toBe('Provisioning');
  });

  const server = readServer({
    id: 1,
    name: 'server.example.com',
    status: 'running',
    created: '2017-08-16T17:29:14+00:00',
    public_net: {
      ipv4: null,
      ipv6: { ip: '2a01:4f8:1c11:3400::/64', blocked: false, dns_ptr: [] },
    },
    server_type: { id: 2, name: 'cx23' },
    datacenter: {
      name: 'fsn1-dc8',
      location: { name: 'fsn1', country: 'DE', network_zone: 'eu-central' },
    },
    labels: { key: 'value' },
    locked: false,
  });

  it('reads a server as the API writes it (no IPv4 here)', () => {
    expect(server).toMatchObject({
      ipv4: undefined,
      ipv6: '2a01:4f8:1c11:3400::/64',
      location: 'fsn1',
    });
    expect(ipv6RangeOf(server)).toBe('2a01:4f8:1c11:3400::/64');
    expect(locationOf(server)).toEqual({ region: 'fsn1', zone: 'fsn1-dc8', country: 'DE' });
    expect(locationOf({ ...server, country: 'Germany' })).toEqual({
      region: 'fsn1',
      zone: 'fsn1-dc8',
    });
  });

  it('a field of the wrong type is a TypeError (a malformed answer), never a default', () => {
    expect(() => readServer({ id: '1' })).toThrow(TypeError);
    expect(() => readServer(null)).toThrow(TypeError);
  });
});

describe('the firewall', () => {
  it('is named after the server, and stays within 63 characters', () => {
    expect(firewallName('proxy-a')).toBe('proxy-op-proxy-a');
    const long = `p${'x'.repeat(62)}`;
    const name = firewallName(long);
    expect(name.length).toBeLessThanOrEqual(63);
    expect(name).not.toBe(firewallName(`q${'x'.repeat(62)}`));
  });

  it('takes addresses as /32 and /128, and compares rules whatever the order of sources', () => {
    expect(['192.0.2.1', '2001:db8::1', '10.0.0.0/8'].map(asCidr)).toEqual([
      '192.0.2.1/32',
      '2001:db8::1/128',
      '10.0.0.0/8',
    ]);
    const want = firewallRules(3128, ['10.0.0.0/8', '192.0.2.1/32']);
    const have = [
      {
        direction: 'in' as const,
        protocol: 'tcp',
        port: '3128',
        sourceIps: ['192.0.2.1/32', '10.0.0.0/8'],
        description: undefined,
      },
    ];
    expect(sameRules(have, want)).toBe(true);
    expect(sameRules([{ ...have[0]!, port: '8080' }], want)).toBe(false);
    expect(sameRules([], want)).toBe(false);
  });
});

describe('answers and errors', () => {
  it('reads an invalid_input with its fields, and a resource limit with its limits', () => {
    const e = apiErrorOf(
      'POST /servers',
      422,
      'Unprocessable Entity',
      JSON.stringify({
        error: {
          code: 'invalid_input',
          message: "invalid input in fields 'source_server', 'image'",
          details: {
            fields: [{ name: 'source_server' }, { name: 'image', messages: ['is required'] }],
          },
        },
      }),
      undefined,
    );
    expect(e.message).toBe(
      "POST /servers: invalid input in fields 'source_server', 'image' (invalid_input, HTTP 422); fields: source_server; image: is required",
    );
    const q = apiErrorOf(
      'POST /servers',
      403,
      '',
      '{"error":{"code":"resource_limit_exceeded","message":"project limit exceeded","details":{"limits":[{"name":"project_limit"}]}}}',
      undefined,
    );
    expect(q.limits).toEqual(['project_limit']);
    expect(q.message).toContain('; limits: project_limit');
  });

  it('an answer that is not the API’s error shape keeps its status text', () => {
    const e = apiErrorOf('GET /servers', 502, 'Bad Gateway', '<html>', undefined);
    expect([e.apiCode, e.apiMessage, e.httpStatus]).toEqual(['unknown', 'Bad Gateway', 502]);
  });

  it('reads the rate-limit headers; Reset is a UNIX time', () => {
    const r = rateLimitOf(
      new Headers({
        'RateLimit-Limit': '3600',
        'RateLimit-Remaining': '0',
        'RateLimit-Reset': '1511954577',
      }),
    );
    expect(r).toEqual({ limit: 3600, remaining: 0, reset: new Date(1511954577_000) });
    expect(rateLimitOf(new Headers())).toBeUndefined();
  });

  it('logs a failure by status, API code and fields, never by its message', () => {
    const e = new HetznerApiError({
      request: 'GET /servers',
      httpStatus: 401,
      apiCode: 'unauthorized',
      apiMessage: 'unable to authenticate with token secret',
    });
    expect(errorFields(e)).toEqual({
      error: 'HetznerApiError',
      httpStatus: 401,
      apiCode: 'unauthorized',
    });
    expect(errorFields(new TransportError('GET /servers', 'ECONNRESET', undefined))).toEqual({
      error: 'TransportError',
      errno: 'ECONNRESET',
    });
  });
});

describe('the seam', () => {
  it('budgets writes and reads apart', () => {
    const t = CONFIG_DEFAULTS.timeouts;
    expect(callBudget(t, 'createServer')).toBe(t.writeMs);
    expect(callBudget(t, 'deleteFirewall')).toBe(t.writeMs);
    expect(callBudget(t, 'findServer')).toBe(t.readMs);
  });

  it('puts only identifiers on spans, and never the user data in a logged body', () => {
    expect(seamFields('createServer', [{ name: 'proxy-a', user_data: 'secret' }])).toEqual({
      server: 'proxy-a',
    });
    expect(seamFields('listServers', ['a=b', 2])).toEqual({ selector: 'a=b', page: '2' });
    expect(elideUserData({ name: 'a', user_data: 'héllo' })).toEqual({
      name: 'a',
      user_data: '<6 bytes elided>',
    });
  });
});
