/**
 * An HTTPS front for the Kubernetes API test server, between the provider
 * and the server: it counts the provider's requests and holds, refuses or
 * garbles them on the harness's command, at the wire, as a load balancer
 * or a slow apiserver would. A held request has reached the API: when its
 * caller gives up, the front still forwards it once released, and the
 * server carries it out.
 *
 * Peer: the Kubernetes API test server behind it.
 *
 * @module
 */
import { Agent, createServer, request as httpsRequest, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Gate } from '@proxy-op/providertest';
import { createGate } from '@proxy-op/providertest';
import { selfSignedCert } from '@proxy-op/testkit';

/** One request as the front saw it. */
export interface Seen {
  readonly method: string;
  readonly path: string;
}

/** A refusal the front answers instead of forwarding (an admission plugin, say). */
export interface Refusal {
  readonly status: number;
  readonly body: unknown;
}

/** Decides, per request, whether the front refuses it instead of forwarding. */
export type Admission = (req: {
  method: string;
  path: string;
  body: unknown;
}) => Refusal | undefined | Promise<Refusal | undefined>;

let certs: Promise<{ key: string; cert: string }> | undefined;

/** The front; start with {@link ApiFront.start}. */
export class ApiFront {
  /** Every request, in order. */
  readonly seen: Seen[] = [];
  /** Called after a Pod create succeeded, before its answer goes back (the scheduler's turn). */
  onPodCreated: ((namespace: string, name: string) => Promise<void>) | undefined;
  /** Decides refusals before forwarding (the quota admission of a harness). */
  admission: Admission | undefined;
  readonly #server: Server;
  readonly #upstream: URL;
  readonly #upstreamCa: string;
  readonly #agent = new Agent({ keepAlive: true });
  readonly #sockets = new Set<Socket>();
  #blocker: { skip: number; gate: ReturnType<typeof createGate> } | undefined;
  #deleteHolds = new Map<string, ReturnType<typeof createGate>>();
  #malformed: { body: string; contentType: string }[] = [];
  #unreachable = false;

  private constructor(
    server: Server,
    upstream: string,
    upstreamCa: string,
    readonly cert: string,
  ) {
    this.#server = server;
    this.#upstream = new URL(upstream);
    this.#upstreamCa = upstreamCa;
  }

  /** Starts a front on 127.0.0.1 (a free port) for the server at `upstream`. */
  static async start(upstream: string, upstreamCa: string): Promise<ApiFront> {
    certs ??= selfSignedCert();
    const { key, cert } = await certs;
    const server = createServer({ key, cert });
    const front = new ApiFront(server, upstream, upstreamCa, cert);
    server.on('request', (req, res) => {
      front.#handle(req, res).catch((err: unknown) => {
        if (res.destroyed || res.headersSent) return;
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`front: ${(err as Error).message}`);
      });
    });
    server.on('secureConnection', (s: Socket) => {
      if (front.#unreachable) {
        s.destroy();
        return;
      }
      front.#sockets.add(s);
      s.on('close', () => front.#sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return front;
  }

  /** `https://127.0.0.1:<port>`. */
  get url(): string {
    return `https://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** How many requests reached the front. */
  get count(): number {
    return this.seen.length;
  }

  /** Holds every request after the next `skip`, until released. */
  blockCalls(skip: number): Gate {
    const gate = createGate();
    this.#blocker = { skip, gate };
    return {
      reached: gate.reached,
      release: () => {
        if (this.#blocker?.gate === gate) this.#blocker = undefined;
        gate.release();
      },
    };
  }

  /** Holds the next DELETE of `path` until released. */
  holdNextDelete(path: string): Gate {
    const gate = createGate();
    this.#deleteHolds.set(path, gate);
    return { reached: gate.reached, release: () => gate.release() };
  }

  /** The next request is forwarded, and its answer replaced by a 200 with `body` (JSON unless said). */
  injectMalformed(body = '{}', contentType = 'application/json'): void {
    this.#malformed.push({ body, contentType });
  }

  /** Cuts every connection and refuses new ones (TLS handshakes are reset) until turned off. */
  setUnreachable(on: boolean): void {
    this.#unreachable = on;
    if (on) for (const s of this.#sockets) s.destroy();
  }

  async stop(): Promise<void> {
    this.#blocker?.gate.release();
    for (const g of this.#deleteHolds.values()) g.release();
    for (const s of this.#sockets) s.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#agent.destroy();
  }

  async #handle(
    req: import('node:http').IncomingMessage,
    res: import('node:http').ServerResponse,
  ): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    this.seen.push({ method, path });
    const b = this.#blocker;
    if (b !== undefined) {
      if (b.skip > 0) b.skip--;
      else {
        // Reached the API: carried out once released, whether or not the caller still waits.
        b.gate.reach();
        await b.gate.released;
      }
    }
    const pathOnly = path.split('?')[0] ?? path;
    const hold = method === 'DELETE' ? this.#deleteHolds.get(pathOnly) : undefined;
    if (hold !== undefined) {
      this.#deleteHolds.delete(pathOnly);
      hold.reach();
      await hold.released;
    }
    const malformed = this.#malformed.shift();
    let answer: { status: number; headers: Record<string, string>; body: Buffer };
    const refusal = await this.admission?.({
      method,
      path,
      body: body.length > 0 ? safeJson(body) : undefined,
    });
    if (refusal !== undefined) {
      answer = {
        status: refusal.status,
        headers: { 'content-type': 'application/json' },
        body: Buffer.from(JSON.stringify(refusal.body)),
      };
    } else {
      answer = await this.#forward(method, path, req.headers, body);
      const created = /^\/api\/v1\/namespaces\/([^/]+)\/pods$/.exec(pathOnly);
      if (
        method === 'POST' &&
        created !== null &&
        answer.status === 201 &&
        !path.includes('dryRun') &&
        this.onPodCreated !== undefined
      ) {
        const name = (safeJson(answer.body) as { metadata?: { name?: string } })?.metadata?.name;
        if (name !== undefined) await this.onPodCreated(created[1] as string, name);
      }
    }
    if (malformed !== undefined) {
      answer = {
        status: 200,
        headers: { 'content-type': malformed.contentType },
        body: Buffer.from(malformed.body),
      };
    }
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(answer.status, { ...answer.headers, 'content-length': answer.body.length });
    res.end(answer.body);
  }

  #forward(
    method: string,
    path: string,
    headers: import('node:http').IncomingHttpHeaders,
    body: Buffer,
  ): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) {
      if (v === undefined || k === 'host' || k === 'connection') continue;
      out[k] = Array.isArray(v) ? v.join(', ') : v;
    }
    return new Promise((resolve, reject) => {
      const up = httpsRequest(
        new URL(path, this.#upstream),
        { method, headers: out, ca: this.#upstreamCa, agent: this.#agent },
        (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => {
            const h: Record<string, string> = {};
            for (const [k, v] of Object.entries(r.headers)) {
              if (v === undefined || k === 'content-length' || k === 'transfer-encoding') continue;
              if (k === 'connection' || k === 'keep-alive') continue;
              h[k] = Array.isArray(v) ? v.join(', ') : v;
            }
            resolve({ status: r.statusCode ?? 502, headers: h, body: Buffer.concat(chunks) });
          });
          r.on('error', reject);
        },
      );
      up.on('error', reject);
      up.end(body);
    });
  }
}

function safeJson(b: Buffer): unknown {
  try {
    return JSON.parse(b.toString('utf8'));
  } catch {
    return undefined;
  }
}
