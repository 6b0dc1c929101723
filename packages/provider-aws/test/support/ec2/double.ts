// Test support (not a test file): a double of the Amazon EC2 Query API on 127.0.0.1, for the
// provider's tests and for the real aws CLI (test/aws-cli.test.ts holds it to the CLI). It
// speaks EC2's wire format (form-encoded POST, XML answers, XML errors with Code and Message and
// a RequestID), checks each request's Signature Version 4 against the credentials it accepts,
// answers DryRun with DryRunOperation or UnauthorizedOperation, and behaves as EC2 does by
// default: a new instance is invisible for a moment (eventual consistency), pending before it
// runs, shutting-down before it is terminated, listed as terminated for an hour, and a Spot
// Instance may be taken back at any time. Tests turn those off only where they test something
// else. The harness controls (held calls, malformed answers, capacity, launch failures, Spot
// interruptions) act behind the clients' backs.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGate, type HarnessGate } from '@proxy-op/providertest';
import { catalogHandlers } from './catalog.js';
import { groupHandlers } from './groups.js';
import { instanceHandlers } from './instances.js';
import {
  type DoubleGroup,
  type DoubleImage,
  type DoubleInstance,
  type DoubleInstanceType,
  type DoubleSubnet,
  SPOT_TERMINATED,
  type StateReason,
  USER_TERMINATED,
} from './model.js';
import { type DoubleCredential, verifySignature } from './sigv4.js';
import {
  answer,
  bool,
  clientError,
  Ec2Fault,
  type Params,
  parseForm,
  requestId,
  resourceId,
  str,
  type Xml,
} from './wire.js';

/** One action's handler: the answer's fields, or an `Ec2Fault`. */
export type Handler = (
  d: Ec2Double,
  p: Params,
) => Record<string, Xml> | Promise<Record<string, Xml>>;

/** How the double starts. Every time is in milliseconds. */
export interface Ec2DoubleOptions {
  readonly region?: string;
  readonly accountId?: string;
  /** Availability zones, one subnet each (default `<region>a`, `<region>b`). */
  readonly zones?: readonly string[];
  /** The credentials accepted (default one long-term key, `DOUBLE_CREDENTIAL`). */
  readonly credentials?: readonly DoubleCredential[];
  /** How long a new instance stays invisible to Describe* and to calls naming it (default 1000). */
  readonly consistencyMs?: number;
  /** From pending to running (default 300). */
  readonly bootMs?: number;
  /** From shutting-down to terminated (default 300). */
  readonly terminateMs?: number;
  /** How long a terminated instance is still listed (default one hour). */
  readonly terminatedVisibleMs?: number;
  /**
   * When EC2 takes a running Spot Instance back on its own: a random time
   * between `minMs` and `maxMs` after it starts running (default 1 to 10
   * minutes), or `false` (never, unless `interrupt` is called).
   */
  readonly spotInterruption?: { readonly minMs: number; readonly maxMs: number } | false;
}

/** The long-term key the double accepts unless told otherwise. */
export const DOUBLE_CREDENTIAL: DoubleCredential = Object.freeze({
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
});

/** The AMIs of the catalogue: Ubuntu 24.04 and Debian 12, as their publishers name them. */
export const UBUNTU_AMI = 'ami-0e872aee57663ae2d';
export const DEBIAN_AMI = 'ami-0a628e1e89aaedf80';

const INSTANCE_TYPES: Readonly<Record<string, DoubleInstanceType>> = {
  't3.nano': { vcpus: 2, memoryMiB: 512, arch: 'x86_64' },
  't3.micro': { vcpus: 2, memoryMiB: 1024, arch: 'x86_64' },
  't3.small': { vcpus: 2, memoryMiB: 2048, arch: 'x86_64' },
  't3.medium': { vcpus: 2, memoryMiB: 4096, arch: 'x86_64' },
  't4g.micro': { vcpus: 2, memoryMiB: 1024, arch: 'arm64' },
  'm7i.large': { vcpus: 2, memoryMiB: 8192, arch: 'x86_64' },
};

/** The EC2 double. `startEc2Double` builds and starts one. */
export class Ec2Double {
  readonly region: string;
  readonly accountId: string;
  readonly vpcId = 'vpc-0b7e1c2d3a4f56789';
  readonly zones: string[];
  /** Subnets by ID; `subnetOf(zone)` finds a zone's. */
  readonly subnets = new Map<string, DoubleSubnet>();
  readonly images = new Map<string, DoubleImage>();
  readonly instanceTypes = new Map<string, DoubleInstanceType>(Object.entries(INSTANCE_TYPES));
  readonly credentials = new Map<string, DoubleCredential>();
  readonly instances = new Map<string, DoubleInstance>();
  readonly groups = new Map<string, DoubleGroup>();
  /** Client tokens of RunInstances: the instance each made and a digest of its arguments. */
  readonly tokens = new Map<string, { instanceId: string; digest: string }>();
  /** Every request, in order: its action and parameters (after the signature check). */
  readonly requests: { action: string; params: Params }[] = [];
  /** Actions the caller is not allowed (`RunInstances`): UnauthorizedOperation, DryRun or not. */
  readonly denied = new Set<string>();
  consistencyMs: number;
  bootMs: number;
  terminateMs: number;
  terminatedVisibleMs: number;
  spotInterruption: { minMs: number; maxMs: number } | false;
  /** RunInstances answers InsufficientInstanceCapacity. */
  insufficientCapacity = false;
  /** The account's vCPU limit for the instances' bucket: RunInstances past it is VcpuLimitExceeded. */
  vcpuLimit: number | undefined;
  /** The next launches are accepted and then fail with this state reason (as EC2's `Server.*`). */
  failNextLaunch: { reason: StateReason; times: number } | undefined;
  /** A refused credential's answer names the session token presented (leak tests). */
  echoCredential = false;
  url = '';
  #server: Server | undefined;
  readonly #timers = new Set<NodeJS.Timeout>();
  #blocker: { skip: number; gate: HarnessGate } | undefined;
  readonly #terminateHolds = new Map<string, HarnessGate>();
  #malformed: string[] = [];
  readonly #canned: Ec2Fault[] = [];
  #addresses = 10;
  readonly #handlers: Record<string, Handler> = {
    ...instanceHandlers,
    ...groupHandlers,
    ...catalogHandlers,
  };

  constructor(o: Ec2DoubleOptions = {}) {
    this.region = o.region ?? 'eu-central-1';
    this.accountId = o.accountId ?? '123456789012';
    this.zones = [...(o.zones ?? [`${this.region}a`, `${this.region}b`])];
    for (const c of o.credentials ?? [DOUBLE_CREDENTIAL]) this.credentials.set(c.accessKeyId, c);
    this.consistencyMs = o.consistencyMs ?? 1000;
    this.bootMs = o.bootMs ?? 300;
    this.terminateMs = o.terminateMs ?? 300;
    this.terminatedVisibleMs = o.terminatedVisibleMs ?? 3_600_000;
    this.spotInterruption = o.spotInterruption ?? { minMs: 60_000, maxMs: 600_000 };
    this.zones.forEach((zone, i) => {
      const subnetId = `subnet-0${(i + 1).toString(16)}a2b3c4d5e6f7081`;
      this.subnets.set(subnetId, {
        subnetId,
        zone,
        zoneId: `euc1-az${i + 1}`,
        vpcId: this.vpcId,
        cidr: `10.0.${i}.0/24`,
        ipv6Cidr: `2001:db8:0:${i}::/64`,
        mapPublicIpOnLaunch: false,
        assignIpv6AddressOnCreation: false,
      });
    });
    this.images.set(UBUNTU_AMI, {
      imageId: UBUNTU_AMI,
      name: 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250115',
      ownerId: '099720109477',
      description: 'Canonical, Ubuntu, 24.04, amd64 noble image',
    });
    this.images.set(DEBIAN_AMI, {
      imageId: DEBIAN_AMI,
      name: 'debian-12-amd64-20250112-1993',
      ownerId: '136693071363',
      description: 'Debian 12 (20250112-1993)',
    });
  }

  // ---- what handlers use -----------------------------------------------------------------------

  /** The subnet of a zone. */
  subnetOf(zone: string): DoubleSubnet {
    const s = [...this.subnets.values()].find((x) => x.zone === zone);
    if (s === undefined) throw new Error(`double: no subnet in ${zone}`);
    return s;
  }

  /** Whether an instance is visible yet (eventual consistency) and not gone. */
  visible(i: DoubleInstance, now = Date.now()): boolean {
    return i.visibleAt <= now && (i.goneAt === undefined || i.goneAt > now);
  }

  /** The next public IPv4 address (TEST-NET-3). */
  nextPublicIp(): string {
    return `203.0.113.${this.#addresses++ % 250}`;
  }

  /** A name of a group, for the `groupSet` of an instance. */
  groupName(id: string): string {
    return this.groups.get(id)?.groupName ?? id;
  }

  /** Runs `fn` after `ms` (unless the double closes first). */
  later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, ms);
    t.unref();
    this.#timers.add(t);
  }

  /** The gate a TerminateInstances naming `instanceId` waits on, once (`holdNextTerminate`). */
  takeTerminateHold(instanceId: string): HarnessGate | undefined {
    const g = this.#terminateHolds.get(instanceId);
    this.#terminateHolds.delete(instanceId);
    return g;
  }

  // ---- instance life ---------------------------------------------------------------------------

  /** Starts a pending instance: running, with its addresses; a Spot one may be taken back later. */
  boot(i: DoubleInstance): void {
    if (i.state !== 'pending') return;
    const reason = this.failNextLaunchReason();
    if (reason !== undefined) {
      this.#terminateNow(i, reason, `Server initiated (${gmt(new Date())})`);
      return;
    }
    i.state = 'running';
    const subnet = this.subnets.get(i.subnetId);
    if (i.associatePublic || subnet?.mapPublicIpOnLaunch) i.publicIp = this.nextPublicIp();
    const si = this.spotInterruption;
    if (i.spot !== undefined && si !== false) {
      this.later(si.minMs + Math.random() * (si.maxMs - si.minMs), () => {
        if (i.state === 'running') this.interrupt(i);
      });
    }
  }

  failNextLaunchReason(): StateReason | undefined {
    const f = this.failNextLaunch;
    if (f === undefined) return undefined;
    if (--f.times <= 0) this.failNextLaunch = undefined;
    return f.reason;
  }

  /** Starts terminating an instance: shutting-down (no public address), terminated after `terminateMs`. */
  terminate(i: DoubleInstance, reason: StateReason, transition: string): void {
    if (i.state === 'shutting-down' || i.state === 'terminated') return;
    i.state = 'shutting-down';
    i.stateReason = reason;
    i.transitionReason = transition;
    i.publicIp = undefined;
    this.later(this.terminateMs, () => this.#finishTermination(i));
  }

  #terminateNow(i: DoubleInstance, reason: StateReason, transition: string): void {
    i.stateReason = reason;
    i.transitionReason = transition;
    i.publicIp = undefined;
    this.#finishTermination(i);
  }

  #finishTermination(i: DoubleInstance): void {
    if (i.state === 'terminated') return;
    i.state = 'terminated';
    i.publicIp = undefined;
    i.ipv6 = undefined;
    i.goneAt = Date.now() + this.terminatedVisibleMs;
  }

  // ---- harness controls ------------------------------------------------------------------------

  /** EC2 takes a Spot Instance back (interruption behaviour terminate): shutting-down, then terminated. */
  interrupt(i: DoubleInstance): void {
    if (i.spot === undefined) throw new Error(`double: ${i.instanceId} is not a Spot Instance`);
    this.terminate(i, SPOT_TERMINATED, `Service initiated (${gmt(new Date())})`);
  }

  /** A client terminated it (the console, the CLI). */
  terminateByUser(i: DoubleInstance): void {
    this.terminate(i, USER_TERMINATED, `User initiated (${gmt(new Date())})`);
  }

  /** Ends every pending termination now, and every instance's invisibility. */
  settle(): void {
    for (const i of this.instances.values()) {
      i.visibleAt = Math.min(i.visibleAt, Date.now());
      if (i.state === 'shutting-down') this.#finishTermination(i);
    }
  }

  /** EC2 stops listing a terminated instance (it does about an hour after the termination). */
  forget(i: DoubleInstance): void {
    if (i.state !== 'terminated')
      throw new Error(`double: ${i.instanceId} is ${i.state}, not terminated`);
    i.goneAt = Date.now();
  }

  /** Makes an instance visible now (its consistency window ends). */
  reveal(i: DoubleInstance): void {
    i.visibleAt = Math.min(i.visibleAt, Date.now());
  }

  /**
   * Plants an instance directly (no launch, no client token): `state`,
   * `tags`, a public address, Spot or not. A `pending` one never boots.
   */
  plant(o: {
    name: string;
    zone?: string;
    state: string;
    tags?: Record<string, string>;
    publicIp?: string | undefined;
    spot?: boolean;
    groupIds?: string[];
  }): DoubleInstance {
    const subnet = this.subnetOf(o.zone ?? (this.zones[0] as string));
    const n = this.instances.size + 100;
    const i: DoubleInstance = {
      instanceId: resourceId('i'),
      reservationId: resourceId('r'),
      imageId: UBUNTU_AMI,
      instanceType: 't3.micro',
      zone: subnet.zone,
      subnetId: subnet.subnetId,
      vpcId: subnet.vpcId,
      state: o.state,
      stateReason: undefined,
      transitionReason: '',
      launchTime: new Date(Math.floor(Date.now() / 1000) * 1000),
      clientToken: '',
      tags: new Map(Object.entries({ Name: o.name, ...o.tags })),
      publicIp: o.publicIp,
      privateIp: `${subnet.cidr.split('.').slice(0, 3).join('.')}.${n % 250}`,
      ipv6: undefined,
      associatePublic: true,
      groupIds: o.groupIds ?? [],
      spot: o.spot ? { requestId: `sir-${randomBytes(4).toString('hex')}` } : undefined,
      metadata: { httpTokens: 'required', hopLimit: 1, httpEndpoint: 'enabled' },
      userData: '',
      visibleAt: Date.now(),
      goneAt: undefined,
      eniId: resourceId('eni'),
      volumeId: resourceId('vol'),
      macAddress: '06:00:00:00:00:01',
      otherTags: new Map(),
    };
    this.instances.set(i.instanceId, i);
    return i;
  }

  /** Instances that are not terminated. */
  liveInstances(): DoubleInstance[] {
    return [...this.instances.values()].filter((i) => i.state !== 'terminated');
  }

  /** Instances whose `Name` tag is `name`, newest first. */
  named(name: string): DoubleInstance[] {
    return [...this.instances.values()]
      .filter((i) => i.tags.get('Name') === name)
      .sort((a, b) => b.launchTime.getTime() - a.launchTime.getTime());
  }

  /** Holds every request after `skip` more until the gate is released; held requests are then carried out. */
  blockCalls(skip: number): HarnessGate {
    const gate = createGate();
    this.#blocker = { skip, gate };
    void gate.released.then(() => {
      if (this.#blocker?.gate === gate) this.#blocker = undefined;
    });
    return gate;
  }

  /** The next TerminateInstances naming the instance waits for the gate before it is carried out. */
  holdNextTerminate(instanceId: string): HarnessGate {
    const gate = createGate();
    this.#terminateHolds.set(instanceId, gate);
    return gate;
  }

  /** The next request is answered 200 with a body a client cannot read. */
  injectMalformed(kind: 'not-xml' | 'empty' | 'wrong-type' = 'empty'): void {
    this.#malformed.push(kind);
  }

  /** The next request (once its signature is checked) is answered with this fault. */
  answerNext(fault: Ec2Fault): void {
    this.#canned.push(fault);
  }

  // ---- the server ------------------------------------------------------------------------------

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
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#blocker?.gate.release();
    for (const g of this.#terminateHolds.values()) g.release();
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const rid = requestId();
    const send = (status: number, text: string) => {
      res.writeHead(status, {
        'content-type': 'text/xml;charset=UTF-8',
        'x-amzn-requestid': rid,
        server: 'AmazonEC2',
        date: new Date().toUTCString(),
      });
      res.end(text);
    };
    const params = parseForm(body.toString('utf8'));
    const action = str(params, 'Action') ?? '';
    try {
      if ((req.method ?? 'GET') !== 'POST') {
        throw clientError('InvalidAction', 'The action or operation requested is not valid.');
      }
      verifySignature(
        { method: 'POST', path: req.url ?? '/', headers: req.headers, body },
        this.credentials,
        this.region,
        this.echoCredential,
      );
      this.requests.push({ action, params });
      const blocker = this.#blocker;
      if (blocker !== undefined) {
        if (blocker.skip > 0) blocker.skip--;
        else await blocker.gate.hold();
      }
      const malformed = this.#malformed.shift();
      if (malformed !== undefined) {
        send(200, malformedBody(action, malformed, rid));
        return;
      }
      const canned = this.#canned.shift();
      if (canned !== undefined) throw canned;
      if (str(params, 'Version') !== '2016-11-15') {
        throw clientError(
          'NoSuchVersion',
          `An invalid or unsupported API version ${str(params, 'Version') ?? ''} was specified.`,
        );
      }
      const handler = this.#handlers[action];
      if (handler === undefined) {
        throw clientError(
          'InvalidAction',
          `The action ${action} is not valid for this web service.`,
        );
      }
      if (this.denied.has(action)) throw unauthorized(this, action);
      if (bool(params, 'DryRun') === true) {
        throw new Ec2Fault(
          412,
          'DryRunOperation',
          'Request would have succeeded, but DryRun flag is set.',
        );
      }
      send(200, answer(action, await handler(this, params), rid));
    } catch (err) {
      if (!(err instanceof Ec2Fault)) throw err;
      send(err.status, err.body(rid));
    }
  }
}

/** `2026-12-07 21:53:31 GMT`, as EC2 writes times into `reason`. */
export function gmt(d: Date): string {
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} GMT`;
}

/**
 * The UnauthorizedOperation EC2 answers: who may not do what, and the
 * encoded authorization message, whose decoded form holds the request's
 * context (and so can carry what the request held).
 */
export function unauthorized(d: Ec2Double, action: string): Ec2Fault {
  const context = JSON.stringify({
    allowed: false,
    action: `ec2:${action}`,
    nonce: randomBytes(24).toString('hex'),
  });
  const encoded = Buffer.from(context).toString('base64url').repeat(6);
  return new Ec2Fault(
    403,
    'UnauthorizedOperation',
    `You are not authorized to perform this operation. User: arn:aws:iam::${d.accountId}:user/proxy-op is not authorized to perform: ec2:${action} because no identity-based policy allows the ec2:${action} action. Encoded authorization failure message: ${encoded}`,
  );
}

function malformedBody(action: string, kind: string, rid: string): string {
  if (kind === 'not-xml') return '<html><body><h1>502 Bad Gateway</h1></body></html>';
  if (kind === 'wrong-type') {
    // Every list holds one record whose identifying fields are empty.
    const item =
      '<item><instanceId/><instanceState><code>x</code><name/></instanceState><groupId/><groupName/></item>';
    return `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response><requestId>${rid}</requestId><reservationSet><item><reservationId/><instancesSet>${item}</instancesSet></item></reservationSet><instancesSet>${item}</instancesSet><securityGroupInfo>${item}</securityGroupInfo></${action}Response>`;
  }
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response><requestId>${rid}</requestId></${action}Response>`;
}

/** Builds a double and starts it on 127.0.0.1. */
export async function startEc2Double(o: Ec2DoubleOptions = {}): Promise<Ec2Double> {
  const d = new Ec2Double(o);
  await d.listen();
  return d;
}
