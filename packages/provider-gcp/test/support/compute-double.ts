// Test support (not a test file): a local HTTP double of the Compute Engine REST API (v1, and
// beta for the listing), answering from an in-memory project with the resource shapes, error
// bodies, operation lifecycle, aggregated-list pages and filter language of the real API.
// Shapes follow captured answers (test/fixtures/compute/, see its README for where each comes
// from); the double is held to the real `gcloud` by test/gcloud.test.ts and to the real SDK by
// every other test. What it adds for tests: held calls, malformed answers, unreachable zones,
// quota and asynchronous insert failures, refused credentials.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGate, type HarnessGate } from '@proxy-op/providertest';
import { FilterError, parseFilter } from './filter.js';

type Json = Record<string, unknown>;

/** The base of every self link the API writes, whatever endpoint was asked. */
export const SELF_LINK_BASE = 'https://www.googleapis.com/compute/v1/';

const NAME_RE = /^(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)$/;
const LABEL_KEY = /^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$/u;
const LABEL_VALUE = /^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$/u;
const MAX_METADATA_VALUE = 262144;

/** An API error: status, `errors[0].reason`, message, and optionally the body's `status`. */
/**
 * An instance's `scheduling` as the API reports it: a Standard instance's
 * defaults, or a Spot one's as asked (the termination action STOP when the
 * request names none, as the API defaults it).
 */
function schedulingOf(asked: Json | undefined): Json {
  if (asked?.provisioningModel !== 'SPOT') {
    return {
      onHostMaintenance: 'MIGRATE',
      automaticRestart: true,
      preemptible: false,
      provisioningModel: 'STANDARD',
    };
  }
  return {
    onHostMaintenance: asked.onHostMaintenance ?? 'TERMINATE',
    automaticRestart: asked.automaticRestart ?? false,
    preemptible: false,
    provisioningModel: 'SPOT',
    instanceTerminationAction: asked.instanceTerminationAction ?? 'STOP',
  };
}

export class ApiError extends Error {
  constructor(
    readonly httpStatus: number,
    readonly reason: string,
    message: string,
    readonly extra: Json = {},
    readonly domain = 'global',
  ) {
    super(message);
  }
  body(): Json {
    return {
      error: {
        code: this.httpStatus,
        message: this.message,
        errors: [
          { message: this.message, domain: this.domain, reason: this.reason, ...this.extra },
        ],
        ...(this.extraError ?? {}),
      },
    };
  }
  extraError: Json | undefined;
}

/** The 404 body of a missing resource. */
export function notFound(resource: string): ApiError {
  return new ApiError(404, 'notFound', `The resource '${resource}' was not found`);
}

/** The 400 of a field the API refuses. */
export function invalid(field: string, value: string, why: string): ApiError {
  return new ApiError(400, 'invalid', `Invalid value for field '${field}': '${value}'. ${why}`);
}

/** An operation's failure, as `error.errors[]` and the HTTP status it stands for. */
export interface OperationFailure {
  readonly code: string;
  readonly message: string;
  readonly httpStatus: number;
  readonly httpMessage: string;
  readonly errorDetails?: readonly Json[] | undefined;
}

/** The quota failure the API gives an insert when the project is out of CPUs. */
export function quotaFailure(region: string): OperationFailure {
  return {
    code: 'QUOTA_EXCEEDED',
    message: `Quota 'CPUS' exceeded.  Limit: 8.0 in region ${region}.`,
    httpStatus: 403,
    httpMessage: 'FORBIDDEN',
    errorDetails: [
      {
        quotaInfo: {
          metricName: 'compute.googleapis.com/cpus',
          limitName: 'CPUS-per-project-region',
          dimensions: { region },
          limit: 8,
        },
      },
    ],
  };
}

/** The failure of an insert whose zone has no capacity for the machine type. */
export function stockoutFailure(zone: string, machineType: string): OperationFailure {
  return {
    code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
    message: `The zone 'projects/{project}/zones/${zone}' does not have enough resources available to fulfill the request.  Try a different zone, or try again later.`,
    httpStatus: 503,
    httpMessage: 'SERVICE UNAVAILABLE',
    errorDetails: [
      { errorInfo: { reason: 'resource_availability', metadata: { zone, vmType: machineType } } },
    ],
  };
}

interface OpRecord {
  json: Json;
  scope: string;
  /** Applies the operation's effect and marks it DONE. */
  finish?: (() => void) | undefined;
  timer?: NodeJS.Timeout | undefined;
}

/** Options of {@link startComputeDouble}. */
export interface ComputeDoubleOptions {
  readonly project?: string;
  readonly projectNumber?: string;
  readonly zones?: readonly string[];
  /** Bearer tokens the API accepts. */
  readonly tokens?: readonly string[];
  /** How long an operation runs before it is DONE (default 25 ms). */
  readonly opMs?: number;
  /** Whether an inserted instance runs (with addresses) once its insert is DONE (default true). */
  readonly autoStart?: boolean;
  /** The longest `operations.wait` holds a request (the real API: 2 minutes; default 2000 ms). */
  readonly waitMs?: number;
  /** The most results a page holds whatever `maxResults` asks (the API may return fewer; default 500). */
  readonly pageCap?: number;
}

const MACHINE_TYPES: Record<string, { guestCpus: number; memoryMb: number; description: string }> =
  {
    'e2-micro': {
      guestCpus: 2,
      memoryMb: 1024,
      description: 'Efficient Instance, 2 vCPU (1/8 shared physical core) and 1 GB RAM',
    },
    'e2-small': {
      guestCpus: 2,
      memoryMb: 2048,
      description: 'Efficient Instance, 2 vCPU (1/4 shared physical core) and 2 GB RAM',
    },
    'e2-medium': {
      guestCpus: 2,
      memoryMb: 4096,
      description: 'Efficient Instance, 2 vCPU (1/2 shared physical core) and 4 GB RAM',
    },
    'e2-standard-2': {
      guestCpus: 2,
      memoryMb: 8192,
      description: 'Efficient Instance, 2 vCPUs, 8 GB RAM',
    },
    'n1-standard-1': { guestCpus: 1, memoryMb: 3840, description: '1 vCPU, 3.75 GB RAM' },
  };

/** Public images: family paths and the image each resolves to. */
const IMAGES: Record<string, { image: string; license: string }> = {
  'ubuntu-os-cloud/ubuntu-2404-lts-amd64': {
    image: 'ubuntu-2404-noble-amd64-v20251001',
    license: 'projects/ubuntu-os-cloud/global/licenses/ubuntu-2404-lts',
  },
  'ubuntu-os-cloud/ubuntu-2204-lts': {
    image: 'ubuntu-2204-jammy-v20251002',
    license: 'projects/ubuntu-os-cloud/global/licenses/ubuntu-2204-lts',
  },
  'debian-cloud/debian-12': {
    image: 'debian-12-bookworm-v20251014',
    license: 'projects/debian-cloud/global/licenses/debian-12-bookworm',
  },
};

/** A Compute timestamp: RFC 3339 with milliseconds in the Pacific offset, as the API writes them. */
export function computeTime(d: Date = new Date()): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: 'America/Los_Angeles',
    timeZoneName: 'shortOffset',
  })
    .formatToParts(d)
    .find((p) => p.type === 'timeZoneName')?.value;
  const m = /GMT([+-])(\d+)/.exec(parts ?? '');
  const sign = m?.[1] === '+' ? 1 : -1;
  const hours = Number(m?.[2] ?? 0);
  const local = new Date(d.getTime() + sign * hours * 3_600_000);
  const iso = local.toISOString().replace('Z', '');
  const off = `${sign === 1 ? '+' : '-'}${String(hours).padStart(2, '0')}:00`;
  return `${iso}${off}`;
}

function numericId(): string {
  const n = randomBytes(8).readBigUInt64BE() % 9_000_000_000_000_000_000n;
  return (n + 1_000_000_000_000_000_000n).toString();
}

function fingerprint(): string {
  return randomBytes(8).toString('base64');
}

function hex(n: number): string {
  return randomBytes(Math.ceil(n / 2))
    .toString('hex')
    .slice(0, n);
}

/** The double's state and controls; `url` is what clients are pointed at. */
export class ComputeDouble {
  readonly project: string;
  readonly projectNumber: string;
  readonly zones: string[];
  readonly tokens: Set<string>;
  opMs: number;
  autoStart: boolean;
  readonly waitMs: number;
  readonly pageCap: number;
  url = '';
  /** `instances` by `zone/name`. */
  readonly instances = new Map<string, Json>();
  /** Instances behind an insert that has not finished yet (held by a test). */
  readonly hidden = new Map<string, Json>();
  readonly disks = new Map<string, Json>();
  readonly firewalls = new Map<string, Json>();
  /** Operations by `scope/name` (`zones/us-central1-a/operation-...`, `global/operation-...`). */
  readonly operations = new Map<string, OpRecord>();
  readonly networks = new Set(['default']);
  /** Every request, as `METHOD /path?query`. */
  readonly requests: string[] = [];
  /** How many requests the client hung up on before their answer was sent. */
  hungUp = 0;
  /** Zones that do not answer. */
  readonly isolated = new Set<string>();
  /** Permissions the caller lacks (`compute.instances.list`). */
  readonly denied = new Set<string>();
  /** The Compute API is off for the project. */
  apiDisabled = false;
  /** Inserts are answered with this failure: at once (`accept`), or once the operation ran (`later`). */
  insertFailure: { failure: OperationFailure; when: 'accept' | 'later'; times: number } | undefined;
  /** A 401 names the token it refused (a careless server, for leak tests). */
  echoCredential = false;
  #malformed: string[] = [];
  #canned: { status: number; body: unknown }[] = [];
  #malformedKinds = ['empty-object', 'not-json', 'null', 'wrong-type'];
  #malformedTurn = 0;
  #blocker: { skip: number; gate: HarnessGate } | undefined;
  readonly #deleteHolds = new Map<string, HarnessGate>();
  #server: Server | undefined;
  #ip = 10;

  constructor(o: ComputeDoubleOptions = {}) {
    this.project = o.project ?? 'proxy-op-test';
    this.projectNumber = o.projectNumber ?? '123456789012';
    this.zones = [...(o.zones ?? ['us-central1-a', 'us-central1-b', 'europe-west1-b'])].sort();
    this.tokens = new Set(o.tokens ?? ['test-token']);
    this.opMs = o.opMs ?? 25;
    this.autoStart = o.autoStart ?? true;
    this.waitMs = o.waitMs ?? 2000;
    this.pageCap = o.pageCap ?? 500;
  }

  // ---- harness controls ----------------------------------------------------------------------

  /** Holds every request after `skip` more until the gate is released; held requests are then carried out. */
  blockCalls(skip: number): HarnessGate {
    const gate = createGate();
    this.#blocker = { skip, gate };
    void gate.released.then(() => {
      if (this.#blocker?.gate === gate) this.#blocker = undefined;
    });
    return gate;
  }

  /** The next DELETE of `zone/name` waits for the gate before it is carried out. */
  holdNextDelete(key: string): HarnessGate {
    const gate = createGate();
    this.#deleteHolds.set(key, gate);
    return gate;
  }

  /** The next request is answered with something a client cannot read. */
  injectMalformed(kind?: string): void {
    const k = kind ?? (this.#malformedKinds[this.#malformedTurn++ % 4] as string);
    this.#malformed.push(k);
  }

  /** The next request (once authorised) is answered with this status and body instead. */
  answerNext(status: number, body: unknown): void {
    this.#canned.push({ status, body });
  }

  /** Stores an operation resource as the API would list it (a captured failure, say). */
  plantOperation(op: Json): void {
    const zone = String(op.zone ?? '').replace(/^.*\/zones\//, '');
    const scope = zone === '' ? 'global' : `zones/${zone}`;
    this.operations.set(`${scope}/${String(op.name)}`, { json: { ...op }, scope });
  }

  /** Finishes every running operation now. */
  settle(): void {
    for (const op of this.operations.values()) this.#finish(op);
  }

  /** Finishes the running operations that target `zone/name`. */
  settleInstance(key: string): void {
    for (const op of this.operations.values()) {
      if (String(op.json.targetLink ?? '').endsWith(`/zones/${key.replace('/', '/instances/')}`)) {
        this.#finish(op);
      }
    }
  }

  /** Secondary resources: disks and firewall rules. */
  secondaryCount(): number {
    return this.disks.size + this.firewalls.size;
  }

  /** Plants an instance directly (no operation): `status`, `labels`, addresses. */
  plantInstance(
    zone: string,
    name: string,
    o: {
      status: string;
      labels?: Record<string, string>;
      natIP?: string | undefined;
      tags?: string[];
    },
  ): Json {
    const inst = this.#newInstance(zone, name, {
      machineType: `zones/${zone}/machineTypes/e2-small`,
      labels: o.labels ?? {},
      tags: { items: o.tags ?? [] },
      disks: [
        {
          boot: true,
          autoDelete: true,
          initializeParams: { sourceImage: 'projects/debian-cloud/global/images/family/debian-12' },
        },
      ],
      networkInterfaces: [
        {
          network: 'global/networks/default',
          accessConfigs: [{ name: 'External NAT', type: 'ONE_TO_ONE_NAT' }],
        },
      ],
    });
    inst.status = o.status;
    this.#setNat(inst, o.natIP);
    this.instances.set(`${zone}/${name}`, inst);
    return inst;
  }

  /** Removes an instance and its boot disk at once, with no operation (someone else deleted it). */
  removeInstance(key: string): void {
    const inst = this.instances.get(key);
    if (inst === undefined) return;
    this.instances.delete(key);
    this.#dropDisks(inst);
  }

  /** Hides an existing instance behind a fresh RUNNING insert; the returned function finishes it. */
  holdInsert(key: string): () => void {
    const inst = this.instances.get(key);
    if (inst === undefined) throw new Error(`double: no instance ${key}`);
    this.instances.delete(key);
    this.hidden.set(key, inst);
    const [zone] = key.split('/') as [string];
    const op = this.#startOp(`zones/${zone}`, 'insert', inst, () => {
      this.hidden.delete(key);
      this.instances.set(key, inst);
    });
    if (op.timer !== undefined) clearTimeout(op.timer);
    op.timer = undefined;
    return () => this.#finish(op);
  }

  /**
   * Takes a Spot instance back, as Compute Engine does: records a DONE
   * `compute.instances.preempted` operation on it, releases its ephemeral
   * external address and sets it STOPPING; once an operation's time has
   * passed it is TERMINATED (termination action STOP) or gone with its
   * disks (DELETE). A Standard instance is never taken back: refused.
   */
  preempt(key: string): void {
    const inst = this.instances.get(key);
    if (inst === undefined) throw new Error(`double: no instance ${key}`);
    const sched = inst.scheduling as Json;
    if (sched.provisioningModel !== 'SPOT') {
      throw new Error(
        `double: ${key} is a Standard instance; Compute Engine takes back Spot ones only`,
      );
    }
    const [zone] = key.split('/') as [string];
    const op = this.#startOp(`zones/${zone}`, 'compute.instances.preempted', inst, undefined);
    this.#finish(op);
    inst.status = 'STOPPING';
    this.#setNat(inst, undefined);
    const done = setTimeout(() => {
      if (this.instances.get(key) !== inst || inst.status !== 'STOPPING') return;
      if (sched.instanceTerminationAction === 'DELETE') {
        this.instances.delete(key);
        this.#dropDisks(inst);
      } else inst.status = 'TERMINATED';
    }, this.opMs);
    done.unref();
  }

  /** Sets the external NAT address (or removes it). */
  setNat(inst: Json, ip: string | undefined): void {
    this.#setNat(inst, ip);
  }

  // ---- the server ----------------------------------------------------------------------------

  /** Starts listening on 127.0.0.1 (port 0 unless given). */
  async listen(port = 0): Promise<string> {
    const server = createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(err));
        }
      });
    });
    this.#server = server;
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this.url;
  }

  /** Stops the server and every timer; held requests are let go. */
  async close(): Promise<void> {
    for (const op of this.operations.values()) if (op.timer !== undefined) clearTimeout(op.timer);
    this.#blocker?.gate.release();
    for (const g of this.#deleteHolds.values()) g.release();
    const server = this.#server;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://double');
    const method = req.method ?? 'GET';
    this.requests.push(`${method} ${url.pathname}${url.search}`);
    res.on('close', () => {
      if (!res.writableEnded) this.hungUp++;
    });
    const blocker = this.#blocker;
    if (blocker !== undefined) {
      if (blocker.skip > 0) blocker.skip--;
      else await blocker.gate.hold();
    }
    const malformed = this.#malformed.shift();
    if (malformed !== undefined) return this.#sendMalformed(res, malformed);
    let answer: { status: number; body?: unknown };
    try {
      this.#authorize(req.headers.authorization);
      const canned = this.#canned.shift();
      if (canned !== undefined) {
        res.writeHead(canned.status, {
          'content-type': 'application/json; charset=UTF-8',
          server: 'ESF',
        });
        res.end(JSON.stringify(canned.body));
        return;
      }
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text === '' ? undefined : (JSON.parse(text) as Json);
      answer = await this.#route(method, url, body);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      answer = { status: err.httpStatus, body: err.body() };
    }
    const headers: Record<string, string> = {
      'content-type': 'application/json; charset=UTF-8',
      server: 'ESF',
      vary: 'Origin, X-Origin, Referer',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'SAMEORIGIN',
      'x-xss-protection': '0',
    };
    if (answer.status === 204) {
      res.writeHead(204, { server: 'ESF' });
      res.end();
      return;
    }
    res.writeHead(answer.status, headers);
    res.end(JSON.stringify(answer.body));
  }

  #sendMalformed(res: ServerResponse, kind: string): void {
    const bodies: Record<string, string> = {
      'empty-object': '{}',
      'not-json': '<html><body>502 Bad Gateway</body></html>',
      null: 'null',
      'wrong-type': '{"name": 7, "status": ["RUNNING"], "items": "none", "labels": 3}',
    };
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8', server: 'ESF' });
    res.end(bodies[kind] ?? '{}');
  }

  #authorize(header: string | undefined): void {
    const token = /^Bearer (.+)$/.exec(header ?? '')?.[1];
    if (token === undefined) {
      const e = new ApiError(
        401,
        'required',
        'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
        { location: 'Authorization', locationType: 'header' },
      );
      e.extraError = { status: 'UNAUTHENTICATED' };
      throw e;
    }
    if (!this.tokens.has(token)) {
      const echo = this.echoCredential ? ` (the token presented was ${token})` : '';
      const e = new ApiError(
        401,
        'authError',
        `Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.${echo}`,
        { location: 'Authorization', locationType: 'header' },
      );
      e.extraError = { status: 'UNAUTHENTICATED' };
      throw e;
    }
    if (this.apiDisabled) {
      const n = this.projectNumber;
      const e = new ApiError(
        403,
        'accessNotConfigured',
        `Access Not Configured. Compute Engine API has not been used in project ${n} before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/api/compute.googleapis.com/overview?project=${n} then retry. If you enabled this API recently, wait a few minutes for the action to propagate to our systems and retry.`,
        {
          extendedHelp: `https://console.developers.google.com/apis/api/compute.googleapis.com/overview?project=${n}`,
        },
        'usageLimits',
      );
      throw e;
    }
  }

  #need(permission: string, resource: string): void {
    if (this.denied.has(permission)) {
      throw new ApiError(403, 'forbidden', `Required '${permission}' permission for '${resource}'`);
    }
  }

  #zone(zone: string): void {
    if (!this.zones.includes(zone)) throw notFound(`projects/${this.project}/zones/${zone}`);
    if (this.isolated.has(zone)) {
      const e = new ApiError(503, 'backendError', 'The service is currently unavailable.');
      e.extraError = { status: 'UNAVAILABLE' };
      throw e;
    }
  }

  async #route(
    method: string,
    url: URL,
    body: Json | undefined,
  ): Promise<{ status: number; body?: unknown }> {
    const m = /^\/compute\/(v1|beta)\/projects\/([^/]+)(\/.*)?$/.exec(url.pathname);
    if (m === null) throw new ApiError(404, 'notFound', `Not Found: ${url.pathname}`);
    const project = decodeURIComponent(m[2] as string);
    const rest = m[3] ?? '';
    const q = url.searchParams;
    if (project !== this.project && !['ubuntu-os-cloud', 'debian-cloud'].includes(project)) {
      throw notFound(`projects/${project}`);
    }
    const p = `projects/${project}`;
    const ok = (b: unknown) => ({ status: 200, body: b });
    let r: RegExpExecArray | null;
    const match = (verb: string, re: RegExp) => {
      if (method !== verb) return false;
      r = re.exec(rest);
      return r !== null;
    };
    const g = (i: number) => decodeURIComponent((r as RegExpExecArray)[i] as string);

    if (match('GET', /^$/)) return ok(this.#projectResource());
    if (match('GET', /^\/zones\/([^/]+)$/)) {
      if (!this.zones.includes(g(1))) throw notFound(`${p}/zones/${g(1)}`);
      return ok(this.#zoneResource(g(1)));
    }
    if (match('GET', /^\/zones$/)) {
      return ok({
        kind: 'compute#zoneList',
        id: `${p}/zones`,
        items: this.zones.map((z) => this.#zoneResource(z)),
        selfLink: `${SELF_LINK_BASE}${p}/zones`,
      });
    }
    if (match('GET', /^\/aggregated\/instances$/)) {
      this.#need('compute.instances.list', p);
      return ok(this.#aggregated(q, 'instances'));
    }
    if (match('GET', /^\/aggregated\/operations$/)) {
      return ok(this.#aggregated(q, 'operations'));
    }
    if (match('GET', /^\/zones\/([^/]+)\/instances$/)) {
      this.#need('compute.instances.list', p);
      this.#zone(g(1));
      return ok(this.#zoneList(g(1), q));
    }
    if (match('GET', /^\/zones\/([^/]+)\/instances\/([^/]+)$/)) {
      this.#need('compute.instances.get', `${p}/zones/${g(1)}/instances/${g(2)}`);
      this.#zone(g(1));
      const inst = this.instances.get(`${g(1)}/${g(2)}`);
      if (inst === undefined) throw notFound(`${p}/zones/${g(1)}/instances/${g(2)}`);
      return ok(inst);
    }
    if (match('POST', /^\/zones\/([^/]+)\/instances$/)) {
      this.#need('compute.instances.create', `${p}/zones/${g(1)}/instances/${String(body?.name)}`);
      if (!this.zones.includes(g(1))) throw invalid('zone', g(1), 'Unknown zone.');
      this.#zone(g(1));
      return ok(this.#insertInstance(g(1), body ?? {}));
    }
    if (match('DELETE', /^\/zones\/([^/]+)\/instances\/([^/]+)$/)) {
      this.#need('compute.instances.delete', `${p}/zones/${g(1)}/instances/${g(2)}`);
      this.#zone(g(1));
      const key = `${g(1)}/${g(2)}`;
      const hold = this.#deleteHolds.get(key);
      if (hold !== undefined) {
        this.#deleteHolds.delete(key);
        await hold.hold();
      }
      return ok(this.#deleteInstance(g(1), g(2)));
    }
    if (match('GET', /^\/zones\/([^/]+)\/operations$/)) {
      this.#zone(g(1));
      return ok(this.#operationList(`zones/${g(1)}`, q));
    }
    if (match('GET', /^\/zones\/([^/]+)\/operations\/([^/]+)$/)) {
      this.#zone(g(1));
      return ok(this.#operation(`zones/${g(1)}`, g(2)).json);
    }
    if (match('POST', /^\/zones\/([^/]+)\/operations\/([^/]+)\/wait$/)) {
      this.#zone(g(1));
      return ok(await this.#wait(this.#operation(`zones/${g(1)}`, g(2))));
    }
    if (match('DELETE', /^\/zones\/([^/]+)\/operations\/([^/]+)$/)) {
      this.#zone(g(1));
      const op = this.#operation(`zones/${g(1)}`, g(2));
      if (op.timer !== undefined) clearTimeout(op.timer);
      this.operations.delete(`zones/${g(1)}/${g(2)}`);
      return { status: 204 };
    }
    if (match('GET', /^\/global\/operations\/([^/]+)$/))
      return ok(this.#operation('global', g(1)).json);
    if (match('POST', /^\/global\/operations\/([^/]+)\/wait$/)) {
      return ok(await this.#wait(this.#operation('global', g(1))));
    }
    if (match('GET', /^\/global\/firewalls$/)) {
      this.#need('compute.firewalls.list', p);
      return ok(
        this.#list(
          'compute#firewallList',
          `${p}/global/firewalls`,
          [...this.firewalls.values()],
          q,
        ),
      );
    }
    if (match('GET', /^\/global\/firewalls\/([^/]+)$/)) {
      this.#need('compute.firewalls.get', `${p}/global/firewalls/${g(1)}`);
      const rule = this.firewalls.get(g(1));
      if (rule === undefined) throw notFound(`${p}/global/firewalls/${g(1)}`);
      return ok(rule);
    }
    if (match('POST', /^\/global\/firewalls$/)) {
      this.#need('compute.firewalls.create', `${p}/global/firewalls/${String(body?.name)}`);
      return ok(this.#insertFirewall(body ?? {}));
    }
    if (match('DELETE', /^\/global\/firewalls\/([^/]+)$/)) {
      this.#need('compute.firewalls.delete', `${p}/global/firewalls/${g(1)}`);
      return ok(this.#deleteFirewall(g(1)));
    }
    if (match('GET', /^\/global\/images\/family\/([^/]+)$/)) {
      const img = IMAGES[`${project}/${g(1)}`];
      if (img === undefined) throw notFound(`${p}/global/images/family/${g(1)}`);
      return ok(this.#imageResource(project, g(1)));
    }
    if (match('GET', /^\/zones\/([^/]+)\/machineTypes\/([^/]+)$/)) {
      const mt = MACHINE_TYPES[g(2)];
      if (mt === undefined || !this.zones.includes(g(1)))
        throw notFound(`${p}/zones/${g(1)}/machineTypes/${g(2)}`);
      return ok({
        kind: 'compute#machineType',
        id: '1000001',
        creationTimestamp: '1969-12-31T16:00:00.000-08:00',
        name: g(2),
        description: mt.description,
        guestCpus: mt.guestCpus,
        memoryMb: mt.memoryMb,
        maximumPersistentDisks: 128,
        maximumPersistentDisksSizeGb: '263168',
        zone: g(1),
        selfLink: `${SELF_LINK_BASE}${p}/zones/${g(1)}/machineTypes/${g(2)}`,
        isSharedCpu: g(2) !== 'e2-standard-2' && g(2) !== 'n1-standard-1',
        architecture: 'X86_64',
      });
    }
    if (match('GET', /^\/global\/networks\/([^/]+)$/)) {
      if (!this.networks.has(g(1))) throw notFound(`${p}/global/networks/${g(1)}`);
      return ok({
        kind: 'compute#network',
        id: '4406183520125651871',
        creationTimestamp: '2024-05-02T01:12:39.882-07:00',
        name: g(1),
        selfLink: `${SELF_LINK_BASE}${p}/global/networks/${g(1)}`,
        autoCreateSubnetworks: true,
        routingConfig: { routingMode: 'REGIONAL' },
        networkFirewallPolicyEnforcementOrder: 'AFTER_CLASSIC_FIREWALL',
      });
    }
    throw new ApiError(
      404,
      'notFound',
      `The requested URL ${url.pathname} was not found on this server.`,
    );
  }

  // ---- resources -----------------------------------------------------------------------------

  #projectResource(): Json {
    return {
      kind: 'compute#project',
      id: this.projectNumber.padEnd(19, '7'),
      creationTimestamp: '2024-05-02T01:11:52.103-07:00',
      name: this.project,
      commonInstanceMetadata: { kind: 'compute#metadata', fingerprint: 'lUBQWeEKA3M=' },
      quotas: [
        { metric: 'FIREWALLS', limit: 200, usage: this.firewalls.size },
        { metric: 'NETWORKS', limit: 15, usage: this.networks.size },
      ],
      selfLink: `${SELF_LINK_BASE}projects/${this.project}`,
      defaultServiceAccount: `${this.projectNumber}-compute@developer.gserviceaccount.com`,
      xpnProjectStatus: 'UNSPECIFIED_XPN_PROJECT_STATUS',
      defaultNetworkTier: 'PREMIUM',
      vmDnsSetting: 'ZONAL_ONLY',
    };
  }

  #zoneResource(zone: string): Json {
    const region = zone.replace(/-[a-z]$/, '');
    return {
      kind: 'compute#zone',
      id: String(2000 + this.zones.indexOf(zone)),
      creationTimestamp: '1969-12-31T16:00:00.000-08:00',
      name: zone,
      description: zone,
      status: this.isolated.has(zone) ? 'DOWN' : 'UP',
      region: `${SELF_LINK_BASE}projects/${this.project}/regions/${region}`,
      selfLink: `${SELF_LINK_BASE}projects/${this.project}/zones/${zone}`,
      availableCpuPlatforms: [
        'Intel Broadwell',
        'Intel Cascade Lake',
        'AMD Milan',
        'AMD Rome',
        'Intel Skylake',
      ],
      supportsPzs: false,
    };
  }

  #imageResource(project: string, family: string): Json {
    const img = IMAGES[`${project}/${family}`] as { image: string; license: string };
    return {
      kind: 'compute#image',
      id: '5209437227553917463',
      creationTimestamp: '2025-10-01T04:22:10.731-07:00',
      name: img.image,
      family,
      selfLink: `${SELF_LINK_BASE}projects/${project}/global/images/${img.image}`,
      sourceType: 'RAW',
      status: 'READY',
      archiveSizeBytes: '2384598912',
      diskSizeGb: '10',
      licenses: [`${SELF_LINK_BASE}${img.license}`],
      architecture: 'X86_64',
    };
  }

  /** A reference in a request, relative to `projects/` (full URLs of any endpoint, or partial). */
  #relative(ref: unknown, zone?: string): string | undefined {
    if (typeof ref !== 'string' || ref === '') return undefined;
    let s = ref.replace(/^https?:\/\/[^/]+\/compute\/(?:v1|beta)\//, '');
    if (s.startsWith('zones/') || s.startsWith('global/') || s.startsWith('regions/')) {
      s = `projects/${this.project}/${s}`;
    } else if (!s.startsWith('projects/') && zone !== undefined) {
      return undefined;
    }
    return s;
  }

  #resolveImage(ref: unknown): { project: string; family: string } | undefined {
    const s = this.#relative(ref);
    const m =
      /^projects\/([^/]+)\/global\/images\/family\/([^/]+)$/.exec(s ?? '') ??
      /^projects\/([^/]+)\/zones\/[^/]+\/imageFamilyViews\/([^/]+)$/.exec(s ?? '');
    if (m !== null && IMAGES[`${m[1]}/${m[2]}`] !== undefined)
      return { project: m[1] as string, family: m[2] as string };
    const byName = /^projects\/([^/]+)\/global\/images\/([^/]+)$/.exec(s ?? '');
    if (byName !== null) {
      for (const [k, v] of Object.entries(IMAGES)) {
        const [proj, family] = k.split('/') as [string, string];
        if (proj === byName[1] && v.image === byName[2]) return { project: proj, family };
      }
    }
    return undefined;
  }

  #checkLabels(labels: unknown, field: string): Record<string, string> {
    if (labels === undefined || labels === null) return {};
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(labels as Record<string, unknown>)) {
      if (!LABEL_KEY.test(k)) {
        throw invalid(
          field,
          '',
          `Label key '${k}' violates format constraints. The key must start with a lowercase character, can only contain lowercase letters, numeric characters, underscores and dashes. The key can be at most 63 characters long. International characters are allowed.`,
        );
      }
      const value = String(v);
      if (!LABEL_VALUE.test(value)) {
        throw invalid(
          field,
          '',
          `Label value '${value}' violates format constraints. The value can only contain lowercase letters, numeric characters, underscores and dashes. The value can be at most 63 characters long. International characters are allowed.`,
        );
      }
      out[k] = value;
    }
    return out;
  }

  #newInstance(zone: string, name: string, body: Json): Json {
    const p = `projects/${this.project}`;
    const machineType = String(this.#relative(body.machineType) ?? '').replace(
      /^.*\/machineTypes\//,
      '',
    );
    const nics = (Array.isArray(body.networkInterfaces) ? body.networkInterfaces : []) as Json[];
    const region = zone.replace(/-[a-z]$/, '');
    const disks = (Array.isArray(body.disks) ? body.disks : []) as Json[];
    const labels = (body.labels ?? {}) as Record<string, string>;
    return {
      kind: 'compute#instance',
      id: numericId(),
      creationTimestamp: computeTime(),
      name,
      tags: {
        items: ((body.tags as Json | undefined)?.items as string[] | undefined) ?? [],
        fingerprint: fingerprint(),
      },
      machineType: `${SELF_LINK_BASE}${p}/zones/${zone}/machineTypes/${machineType}`,
      status: 'PROVISIONING',
      zone: `${SELF_LINK_BASE}${p}/zones/${zone}`,
      canIpForward: false,
      networkInterfaces: nics.map((n, i) => ({
        kind: 'compute#networkInterface',
        network: `${SELF_LINK_BASE}${this.#relative(n.network) ?? `${p}/global/networks/default`}`,
        subnetwork: `${SELF_LINK_BASE}${this.#relative(n.subnetwork) ?? `${p}/regions/${region}/subnetworks/default`}`,
        networkIP: `10.128.0.${this.#ip++}`,
        name: `nic${i}`,
        ...(Array.isArray(n.accessConfigs)
          ? {
              accessConfigs: (n.accessConfigs as Json[]).map((a) => ({
                kind: 'compute#accessConfig',
                type: a.type ?? 'ONE_TO_ONE_NAT',
                name: a.name ?? 'External NAT',
                networkTier: 'PREMIUM',
              })),
            }
          : {}),
        fingerprint: fingerprint(),
        stackType: 'IPV4_ONLY',
      })),
      disks: disks.map((d, i) => ({
        kind: 'compute#attachedDisk',
        type: 'PERSISTENT',
        mode: 'READ_WRITE',
        source: `${SELF_LINK_BASE}${p}/zones/${zone}/disks/${i === 0 ? name : `${name}-${i}`}`,
        deviceName: `persistent-disk-${i}`,
        index: i,
        boot: d.boot === true,
        autoDelete: d.autoDelete === true,
        interface: 'SCSI',
        diskSizeGb: String((d.initializeParams as Json | undefined)?.diskSizeGb ?? '10'),
        architecture: 'X86_64',
      })),
      metadata: {
        kind: 'compute#metadata',
        fingerprint: fingerprint(),
        ...((body.metadata as Json | undefined)?.items === undefined
          ? {}
          : { items: (body.metadata as Json).items }),
      },
      selfLink: `${SELF_LINK_BASE}${p}/zones/${zone}/instances/${name}`,
      scheduling: schedulingOf(body.scheduling as Json | undefined),
      cpuPlatform: 'Unknown CPU Platform',
      ...(Object.keys(labels).length > 0 ? { labels } : {}),
      labelFingerprint: fingerprint(),
      startRestricted: false,
      deletionProtection: false,
      shieldedInstanceConfig: {
        enableSecureBoot: false,
        enableVtpm: true,
        enableIntegrityMonitoring: true,
      },
      shieldedInstanceIntegrityPolicy: { updateAutoLearnPolicy: true },
      fingerprint: fingerprint(),
      lastStartTimestamp: '',
    };
  }

  #setNat(inst: Json, ip: string | undefined): void {
    const nic = (inst.networkInterfaces as Json[])[0];
    const ac = (nic?.accessConfigs as Json[] | undefined)?.[0];
    if (ac === undefined) return;
    if (ip === undefined) delete ac.natIP;
    else ac.natIP = ip;
  }

  #dropDisks(inst: Json): void {
    for (const d of inst.disks as Json[]) {
      if (d.autoDelete !== true) continue;
      const m = /\/zones\/([^/]+)\/disks\/([^/]+)$/.exec(String(d.source));
      if (m !== null) this.disks.delete(`${m[1]}/${m[2]}`);
    }
  }

  #insertInstance(zone: string, body: Json): Json {
    const p = `projects/${this.project}`;
    const name = body.name;
    if (typeof name !== 'string' || !NAME_RE.test(name)) {
      throw invalid(
        'resource.name',
        String(name ?? ''),
        "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'",
      );
    }
    const key = `${zone}/${name}`;
    if (this.instances.has(key) || this.hidden.has(key)) {
      throw new ApiError(
        409,
        'alreadyExists',
        `The resource '${p}/zones/${zone}/instances/${name}' already exists`,
      );
    }
    const mtRef = this.#relative(body.machineType);
    const mt = String(mtRef ?? '').replace(/^.*\/machineTypes\//, '');
    if (
      mtRef === undefined ||
      MACHINE_TYPES[mt] === undefined ||
      !mtRef.includes(`/zones/${zone}/`)
    ) {
      throw invalid(
        'resource.machineType',
        String(body.machineType ?? ''),
        `Machine type with name '${mt}' does not exist in zone '${zone}'.`,
      );
    }
    this.#checkLabels(body.labels, 'resource.labels');
    const nics = (body.networkInterfaces ?? []) as Json[];
    if (!Array.isArray(nics) || nics.length === 0) {
      throw invalid(
        'resource.networkInterfaces',
        '',
        'At least one network interface is required.',
      );
    }
    nics.forEach((n, i) => {
      const net = this.#relative(n.network) ?? `${p}/global/networks/default`;
      const netName = net.replace(/^.*\/networks\//, '');
      if (!net.startsWith(`${p}/`) || !this.networks.has(netName)) {
        throw invalid(
          `resource.networkInterfaces[${i}].network`,
          String(n.network),
          'The referenced network resource cannot be found.',
        );
      }
    });
    const items = ((body.metadata as Json | undefined)?.items ?? []) as Json[];
    for (const it of items) {
      if (typeof it.value === 'string' && Buffer.byteLength(it.value) > MAX_METADATA_VALUE) {
        throw invalid(
          'resource.metadata',
          '',
          `Metadata has a value (key '${String(it.key)}') larger than the maximum of ${MAX_METADATA_VALUE} bytes.`,
        );
      }
    }
    const disks = (body.disks ?? []) as Json[];
    const boot = disks.find((d) => d.boot === true);
    if (boot === undefined) throw invalid('resource.disks', '', 'Boot disk must be specified.');
    const params = (boot.initializeParams ?? {}) as Json;
    this.#checkLabels(params.labels, 'resource.disks[0].initializeParams.labels');
    const inst = this.#newInstance(zone, name, body);

    const failure = this.insertFailure;
    if (failure !== undefined) {
      if (--failure.times <= 0) this.insertFailure = undefined;
      if (failure.when === 'accept')
        return this.#failedOp(`zones/${zone}`, 'insert', inst, failure.failure);
      const op = this.#startOp(`zones/${zone}`, 'insert', inst, undefined);
      op.finish = () => this.#fail(op, failure.failure);
      return op.json;
    }
    const image = this.#resolveImage(params.sourceImage);
    if (image === undefined) {
      const op = this.#startOp(`zones/${zone}`, 'insert', inst, undefined);
      const ref = this.#relative(params.sourceImage) ?? String(params.sourceImage);
      op.finish = () =>
        this.#fail(op, {
          code: 'RESOURCE_NOT_FOUND',
          message: `The resource '${ref}' was not found`,
          httpStatus: 404,
          httpMessage: 'NOT FOUND',
        });
      return op.json;
    }
    if (this.disks.has(key)) {
      const op = this.#startOp(`zones/${zone}`, 'insert', inst, undefined);
      op.finish = () =>
        this.#fail(op, {
          code: 'RESOURCE_ALREADY_EXISTS',
          message: `The resource '${p}/zones/${zone}/disks/${name}' already exists`,
          httpStatus: 409,
          httpMessage: 'CONFLICT',
        });
      return op.json;
    }
    this.instances.set(key, inst);
    for (const d of inst.disks as Json[]) {
      const dm = /\/zones\/([^/]+)\/disks\/([^/]+)$/.exec(String(d.source));
      if (dm !== null) {
        this.disks.set(`${dm[1]}/${dm[2]}`, {
          name: dm[2],
          sourceImage: `${SELF_LINK_BASE}projects/${image.project}/global/images/${IMAGES[`${image.project}/${image.family}`]?.image}`,
          labels: params.labels ?? {},
        });
      }
    }
    const img = IMAGES[`${image.project}/${image.family}`];
    if (img !== undefined)
      (inst.disks as Json[])[0] = {
        ...((inst.disks as Json[])[0] as Json),
        licenses: [`${SELF_LINK_BASE}${img.license}`],
      };
    return this.#startOp(`zones/${zone}`, 'insert', inst, () => {
      if (this.autoStart && inst.status === 'PROVISIONING') {
        inst.status = 'RUNNING';
        inst.cpuPlatform = 'Intel Broadwell';
        inst.lastStartTimestamp = computeTime();
        this.#setNat(inst, `34.70.${Math.floor(this.#ip / 250)}.${(this.#ip++ % 250) + 1}`);
      }
    }).json;
  }

  #deleteInstance(zone: string, name: string): Json {
    const key = `${zone}/${name}`;
    const inst = this.instances.get(key);
    const link = `projects/${this.project}/zones/${zone}/instances/${name}`;
    if (inst === undefined) throw notFound(link);
    const busy = [...this.operations.values()].some(
      (o) =>
        o.json.operationType === 'delete' &&
        o.json.status !== 'DONE' &&
        o.json.targetLink === `${SELF_LINK_BASE}${link}`,
    );
    if (busy) throw new ApiError(400, 'resourceNotReady', `The resource '${link}' is not ready`);
    inst.status = 'STOPPING';
    return this.#startOp(`zones/${zone}`, 'delete', inst, () => {
      if (this.instances.get(key) !== inst) return;
      this.instances.delete(key);
      this.#dropDisks(inst);
    }).json;
  }

  #insertFirewall(body: Json): Json {
    const p = `projects/${this.project}`;
    const name = body.name;
    if (typeof name !== 'string' || !NAME_RE.test(name)) {
      throw invalid(
        'resource.name',
        String(name ?? ''),
        "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'",
      );
    }
    if (this.firewalls.has(name)) {
      throw new ApiError(
        409,
        'alreadyExists',
        `The resource '${p}/global/firewalls/${name}' already exists`,
      );
    }
    const net = this.#relative(body.network) ?? `${p}/global/networks/default`;
    if (!this.networks.has(net.replace(/^.*\/networks\//, ''))) {
      throw invalid(
        'resource.network',
        String(body.network),
        'The referenced network resource cannot be found.',
      );
    }
    const allowed = (body.allowed ?? []) as Json[];
    if (allowed.length === 0 && body.denied === undefined) {
      throw invalid(
        'resource',
        '',
        'Firewall rule must specify at least one of allowed or denied.',
      );
    }
    const rule: Json = {
      kind: 'compute#firewall',
      id: numericId(),
      creationTimestamp: computeTime(),
      name,
      description: body.description ?? '',
      network: `${SELF_LINK_BASE}${net}`,
      priority: body.priority ?? 1000,
      sourceRanges: body.sourceRanges ?? ['0.0.0.0/0'],
      ...(body.targetTags === undefined ? {} : { targetTags: body.targetTags }),
      allowed: allowed.map((a) => ({
        IPProtocol: a.IPProtocol,
        ...(a.ports === undefined ? {} : { ports: a.ports }),
      })),
      direction: body.direction ?? 'INGRESS',
      logConfig: { enable: false },
      disabled: false,
      selfLink: `${SELF_LINK_BASE}${p}/global/firewalls/${name}`,
    };
    this.firewalls.set(name, rule);
    return this.#startOp('global', 'insert', rule, undefined).json;
  }

  #deleteFirewall(name: string): Json {
    const rule = this.firewalls.get(name);
    if (rule === undefined) throw notFound(`projects/${this.project}/global/firewalls/${name}`);
    return this.#startOp('global', 'delete', rule, () => {
      if (this.firewalls.get(name) === rule) this.firewalls.delete(name);
    }).json;
  }

  // ---- operations ----------------------------------------------------------------------------

  #opJson(scope: string, type: string, target: Json): Json {
    const now = new Date();
    const name = `operation-${now.getTime()}-${hex(13)}-${hex(8)}-${hex(8)}`;
    const base = `${SELF_LINK_BASE}projects/${this.project}`;
    return {
      kind: 'compute#operation',
      id: numericId(),
      name,
      ...(scope === 'global' ? {} : { zone: `${base}/${scope}` }),
      operationType: type,
      targetLink: target.selfLink,
      targetId: target.id,
      status: 'RUNNING',
      user: `proxy-op@${this.project}.iam.gserviceaccount.com`,
      progress: 0,
      insertTime: computeTime(now),
      startTime: computeTime(now),
      selfLink: `${base}/${scope}/operations/${name}`,
    };
  }

  #startOp(scope: string, type: string, target: Json, effect: (() => void) | undefined): OpRecord {
    const json = this.#opJson(scope, type, target);
    const op: OpRecord = { json, scope };
    op.finish = () => {
      effect?.();
      json.status = 'DONE';
      json.progress = 100;
      json.endTime = computeTime();
    };
    this.operations.set(`${scope}/${json.name as string}`, op);
    op.timer = setTimeout(() => this.#finish(op), this.opMs);
    op.timer.unref();
    return op;
  }

  #failedOp(scope: string, type: string, target: Json, failure: OperationFailure): Json {
    const op = this.#startOp(scope, type, target, undefined);
    op.finish = () => this.#fail(op, failure);
    this.#finish(op);
    return op.json;
  }

  #fail(op: OpRecord, f: OperationFailure): void {
    const json = op.json;
    json.status = 'DONE';
    json.progress = 100;
    json.endTime = computeTime();
    json.error = {
      errors: [
        {
          code: f.code,
          message: f.message.replace('{project}', this.project),
          ...(f.errorDetails === undefined ? {} : { errorDetails: f.errorDetails }),
        },
      ],
    };
    json.httpErrorStatusCode = f.httpStatus;
    json.httpErrorMessage = f.httpMessage;
  }

  #finish(op: OpRecord): void {
    if (op.timer !== undefined) clearTimeout(op.timer);
    op.timer = undefined;
    if (op.json.status === 'DONE') return;
    const f = op.finish;
    op.finish = undefined;
    f?.();
  }

  #operation(scope: string, name: string): OpRecord {
    const op = this.operations.get(`${scope}/${name}`);
    if (op === undefined) throw notFound(`projects/${this.project}/${scope}/operations/${name}`);
    return op;
  }

  async #wait(op: OpRecord): Promise<Json> {
    const deadline = Date.now() + this.waitMs;
    while (op.json.status !== 'DONE' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
    }
    return op.json;
  }

  // ---- lists ---------------------------------------------------------------------------------

  #filter(q: URLSearchParams): (r: unknown) => boolean {
    const f = q.get('filter') ?? undefined;
    try {
      return parseFilter(f);
    } catch (err) {
      if (err instanceof FilterError)
        throw invalid('filter', f ?? '', 'Invalid list filter expression.');
      throw err;
    }
  }

  #pageSize(q: URLSearchParams): number {
    const raw = q.get('maxResults');
    if (raw === null) return this.pageCap;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0)
      throw invalid('maxResults', raw, 'Must be a non-negative integer.');
    if (n > 500) throw invalid('maxResults', raw, 'Must be less than or equal to 500');
    return Math.min(n === 0 ? 500 : n, this.pageCap);
  }

  #offset(q: URLSearchParams): number {
    const t = q.get('pageToken');
    if (t === null || t === '') return 0;
    const n = Number(
      Buffer.from(t, 'base64url')
        .toString('utf8')
        .replace(/^page:/, ''),
    );
    if (!Number.isInteger(n) || n < 0) throw invalid('pageToken', t, 'Invalid page token.');
    return n;
  }

  #list(kind: string, id: string, all: Json[], q: URLSearchParams): Json {
    const matches = all
      .filter(this.#filter(q))
      .sort((a, b) => String(a.name).localeCompare(String(b.name)));
    const size = this.#pageSize(q);
    const from = this.#offset(q);
    const items = matches.slice(from, from + size);
    const next =
      from + size < matches.length
        ? Buffer.from(`page:${from + size}`).toString('base64url')
        : undefined;
    return {
      kind,
      id,
      ...(items.length > 0 ? { items } : {}),
      ...(next === undefined ? {} : { nextPageToken: next }),
      selfLink: `${SELF_LINK_BASE}${id}`,
    };
  }

  #zoneList(zone: string, q: URLSearchParams): Json {
    const all = [...this.instances.entries()]
      .filter(([k]) => k.startsWith(`${zone}/`))
      .map(([, v]) => v);
    return this.#list(
      'compute#instanceList',
      `projects/${this.project}/zones/${zone}/instances`,
      all,
      q,
    );
  }

  #operationList(scope: string, q: URLSearchParams): Json {
    const all = [...this.operations.values()].filter((o) => o.scope === scope).map((o) => o.json);
    return this.#list(
      'compute#operationList',
      `projects/${this.project}/${scope}/operations`,
      all,
      q,
    );
  }

  /**
   * `aggregated/instances` and `aggregated/operations`: resources in scope then name order,
   * `maxResults` per page; every zone (and, for operations, `global`) appears on every page,
   * with its resources on this page or a NO_RESULTS_ON_PAGE warning. An unreachable zone is an
   * UNREACHABLE warning (and listed in `unreachables`) with `returnPartialSuccess`, and fails
   * the request without it.
   */
  #aggregated(q: URLSearchParams, field: 'instances' | 'operations'): Json {
    const pred = this.#filter(q);
    const partial =
      q.get('returnPartialSuccess') === 'true' || q.get('returnPartialSuccess') === 'True';
    const down = this.zones.filter((z) => this.isolated.has(z));
    if (down.length > 0 && !partial) {
      const e = new ApiError(
        503,
        'backendError',
        `The zone 'projects/${this.project}/zones/${down[0]}' is not reachable; try again or ask for partial success.`,
      );
      e.extraError = { status: 'UNAVAILABLE' };
      throw e;
    }
    const all: [scope: string, key: string, json: Json][] =
      field === 'instances'
        ? [...this.instances.entries()].map(([k, v]) => [`zones/${k.split('/')[0]}`, k, v])
        : [...this.operations.entries()].map(([k, o]) => [o.scope, k, o.json]);
    const matches = all
      .filter(([scope]) => !this.isolated.has(scope.replace(/^zones\//, '')))
      .filter(([, , v]) => pred(v))
      .sort(([, a], [, b]) => a.localeCompare(b));
    const size = this.#pageSize(q);
    const from = this.#offset(q);
    const page = matches.slice(from, from + size);
    const items: Json = {};
    const scopes = this.zones.map((z) => `zones/${z}`);
    for (const scope of field === 'operations' ? ['global', ...scopes] : scopes) {
      const here = page.filter(([s]) => s === scope).map(([, , v]) => v);
      if (this.isolated.has(scope.replace(/^zones\//, ''))) {
        items[scope] = {
          warning: {
            code: 'UNREACHABLE',
            message: `The scope '${scope}' is unreachable.`,
            data: [{ key: 'scope', value: scope }],
          },
        };
      } else if (here.length > 0) {
        items[scope] = { [field]: here };
      } else {
        items[scope] = {
          warning: {
            code: 'NO_RESULTS_ON_PAGE',
            message: `No results for the scope '${scope}'.`,
            data: [{ key: 'scope', value: scope }],
          },
        };
      }
    }
    const next =
      from + size < matches.length
        ? Buffer.from(`page:${from + size}`).toString('base64url')
        : undefined;
    const kind = field === 'instances' ? 'instanceAggregatedList' : 'operationAggregatedList';
    return {
      kind: `compute#${kind}`,
      id: `projects/${this.project}/aggregated/${field}`,
      items,
      ...(next === undefined ? {} : { nextPageToken: next }),
      selfLink: `${SELF_LINK_BASE}projects/${this.project}/aggregated/${field}`,
      ...(down.length > 0 ? { unreachables: down.map((z) => `zones/${z}`) } : {}),
    };
  }
}

/** Starts a double on 127.0.0.1 and a free port. */
export async function startComputeDouble(o: ComputeDoubleOptions = {}): Promise<ComputeDouble> {
  const d = new ComputeDouble(o);
  await d.listen();
  return d;
}
