/**
 * The status page's event stream (server-sent events). One hub serves every
 * viewer from the operator's memory: every push interval, while at least one
 * viewer is connected, it compares each Proxy, provider and pool with what it
 * last sent (an unchanged object is not even serialised) and sends every
 * viewer the same patch, once; with no viewer it does nothing and holds
 * nothing. A new viewer gets the whole state first. A viewer that does not
 * keep up (its unread stream past a bound) is disconnected, and its page
 * connects again and starts afresh, so a slow viewer costs bounded memory
 * and never holds up the others.
 *
 * @module
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from '@proxy-op/contract';
import type { ProxyObject } from '../api/proxy.js';
import type { Settings } from '../defaults.js';
import { proxyKey } from '../store/proxies.js';
import {
  poolViews,
  probeStamp,
  providerViews,
  proxyRow,
  type StatusPageSource,
} from './snapshot.js';
import type { CollectionName, PageRole } from './wire.js';

/** The hub's tunables, in milliseconds where a time. */
/** The settings of the event stream (see `defaults.ts`). */
export type StreamSettings = Pick<
  Settings,
  | 'statusPushMs'
  | 'statusHeartbeatMs'
  | 'statusClientBufferBytes'
  | 'statusMaxViewers'
  | 'statusStreamsPerSource'
>;

/** Why {@link StatusStream.attach} turned a viewer away. */
export type Refusal = 'too-many-viewers' | 'too-many-from-source';

/** What the stream is built with. */
export interface StreamOptions {
  /** How often changes are pushed, when a quiet stream carries a comment, the unread bytes past which a viewer is cut off, viewers at once. */
  readonly settings: StreamSettings;
  /** Where a viewer cut off is logged. */
  readonly logger: Logger;
}

/** What the hub last sent of one Proxy. */
interface Sent {
  readonly obj: ProxyObject;
  readonly stamp: string;
  readonly json: string;
}

/** What the hub counts, for tests and the load test. */
export interface StreamStats {
  /** Viewers connected now. */
  readonly viewers: number;
  /** Messages sent (snapshots and patches, counted once however many viewers got them). */
  readonly messages: number;
  /** Bytes sent to all viewers together. */
  readonly bytes: number;
  /** Viewers disconnected for not keeping up. */
  readonly dropped: number;
}

/** The hub of the event stream; see the module comment. */
export class StatusStream {
  readonly #role: () => PageRole;
  readonly #pushMs: number;
  readonly #heartbeatMs: number;
  readonly #bufferBytes: number;
  readonly #maxViewers: number;
  readonly #perSource: number;
  readonly #log: Logger;
  readonly #viewers = new Set<ServerResponse>();
  /** Streams open per source address. */
  readonly #sources = new Map<string, number>();
  #source: StatusPageSource | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  /** What the viewers have, as last sent; empty while no viewer is connected. */
  #proxies = new Map<string, Sent>();
  #providers = new Map<string, string>();
  #pools = new Map<string, string>();
  #roleJson = '';
  #problemsJson = '[]';
  #messages = 0;
  #bytes = 0;
  #dropped = 0;

  constructor(role: () => PageRole, source: StatusPageSource | undefined, o: StreamOptions) {
    this.#role = role;
    this.#source = source;
    this.#pushMs = o.settings.statusPushMs;
    this.#heartbeatMs = o.settings.statusHeartbeatMs;
    this.#bufferBytes = o.settings.statusClientBufferBytes;
    this.#maxViewers = o.settings.statusMaxViewers;
    this.#perSource = o.settings.statusStreamsPerSource;
    this.#log = o.logger;
  }

  /** The counts so far. */
  stats(): StreamStats {
    return {
      viewers: this.#viewers.size,
      messages: this.#messages,
      bytes: this.#bytes,
      dropped: this.#dropped,
    };
  }

  /** Serves the data of `source` from now on (undefined: none, as a standby). Every viewer starts afresh. */
  serve(source: StatusPageSource | undefined): void {
    this.#source = source;
    if (this.#viewers.size > 0) this.#broadcast('snapshot', this.#snapshot());
  }

  /**
   * Takes a viewer from `source` (its address): sends it the whole state,
   * then the patches. Undefined when taken; else why not: too many viewers
   * at once, or too many from that source (so one client cannot take them
   * all).
   */
  attach(res: ServerResponse, source: string): Refusal | undefined {
    if ((this.#sources.get(source) ?? 0) >= this.#perSource) return 'too-many-from-source';
    if (this.#viewers.size >= this.#maxViewers) return 'too-many-viewers';
    this.#sources.set(source, (this.#sources.get(source) ?? 0) + 1);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    // The new viewer's snapshot is the others' state too: bring that up to date first.
    let snapshot: string;
    if (this.#viewers.size > 0) {
      this.#push();
      snapshot = this.#snapshotOfSent();
    } else snapshot = this.#snapshot();
    this.#viewers.add(res);
    res.on('close', () => this.#detach(res, source));
    this.#write(res, `retry: 2000\n\n`);
    this.#write(res, frame('snapshot', snapshot));
    this.#messages++;
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#push(), this.#pushMs);
      this.#timer.unref?.();
      this.#heartbeat = setInterval(() => {
        for (const v of this.#viewers) this.#write(v, ': keep-alive\n\n');
      }, this.#heartbeatMs);
      this.#heartbeat.unref?.();
    }
    return undefined;
  }

  /** Ends every viewer's stream. */
  close(): void {
    for (const v of [...this.#viewers]) v.end();
    this.#stop();
  }

  #detach(res: ServerResponse, source: string): void {
    if (!this.#viewers.delete(res)) return;
    const n = (this.#sources.get(source) ?? 1) - 1;
    if (n <= 0) this.#sources.delete(source);
    else this.#sources.set(source, n);
    if (this.#viewers.size === 0) this.#stop();
  }

  /** No viewer: no timer, and nothing remembered. */
  #stop(): void {
    clearInterval(this.#timer);
    clearInterval(this.#heartbeat);
    this.#timer = undefined;
    this.#heartbeat = undefined;
    this.#proxies = new Map();
    this.#providers = new Map();
    this.#pools = new Map();
    this.#roleJson = '';
    this.#problemsJson = '[]';
  }

  /** Writes to one viewer; one that has too much unread is disconnected instead. */
  #write(res: ServerResponse, text: string): void {
    if (res.destroyed) return;
    if (res.writableLength > this.#bufferBytes) {
      this.#dropped++;
      this.#log.warn(
        { unread: res.writableLength },
        'a status page viewer does not keep up; disconnected (its page connects again)',
      );
      res.destroy();
      return;
    }
    this.#bytes += Buffer.byteLength(text);
    res.write(text);
  }

  #broadcast(event: string, data: string): void {
    const text = frame(event, data);
    this.#messages++;
    for (const v of this.#viewers) this.#write(v, text);
  }

  /** Remembers the current state as sent, and returns it as a snapshot's JSON. */
  #snapshot(): string {
    this.#proxies = new Map();
    this.#providers = new Map();
    this.#pools = new Map();
    this.#diff();
    return this.#snapshotOfSent();
  }

  /** The state as last sent, as a snapshot's JSON (made of the JSON already at hand). */
  #snapshotOfSent(): string {
    const proxies = [...this.#proxies.values()].map((s) => s.json).join(',');
    const providers = [...this.#providers.values()].join(',');
    const pools = [...this.#pools.values()].join(',');
    return `{"role":${this.#roleJson},"problems":${this.#problemsJson},"providers":[${providers}],"proxies":[${proxies}],"pools":[${pools}]}`;
  }

  /** One push: what changed since the last, to every viewer, as one patch. */
  #push(): void {
    const patch = this.#diff();
    if (patch !== undefined) this.#broadcast('patch', patch);
  }

  /** Brings the state as sent up to date; returns the patch's JSON, or undefined when nothing changed. */
  #diff(): string | undefined {
    const src = this.#source;
    const objects = src?.store.list() ?? [];
    const upsert: Record<CollectionName, string[]> = { proxies: [], providers: [], pools: [] };
    const remove: Record<CollectionName, string[]> = { proxies: [], providers: [], pools: [] };
    const seen = new Set<string>();
    for (const p of objects) {
      const key = proxyKey(p.metadata.namespace, p.metadata.name);
      seen.add(key);
      const stamp = probeStamp(key, src?.probes);
      const sent = this.#proxies.get(key);
      if (sent !== undefined && sent.obj === p && sent.stamp === stamp) continue;
      const json = JSON.stringify(proxyRow(p, src?.probes));
      this.#proxies.set(key, { obj: p, stamp, json });
      if (sent?.json !== json) upsert.proxies.push(json);
    }
    for (const key of this.#proxies.keys()) {
      if (!seen.has(key)) {
        this.#proxies.delete(key);
        remove.proxies.push(key);
      }
    }
    const providers = src === undefined ? [] : providerViews(src, objects);
    diffViews(this.#providers, providers, (v) => v.name, upsert.providers, remove.providers);
    diffViews(this.#pools, poolViews(src), (v) => v.key, upsert.pools, remove.pools);
    const parts: string[] = [];
    const role = JSON.stringify(this.#role());
    if (role !== this.#roleJson) {
      this.#roleJson = role;
      parts.push(`"role":${role}`);
    }
    const problems = JSON.stringify(src?.store.problems?.() ?? []);
    if (problems !== this.#problemsJson) {
      this.#problemsJson = problems;
      parts.push(`"problems":${problems}`);
    }
    const ups = (Object.keys(upsert) as CollectionName[])
      .filter((c) => upsert[c].length > 0)
      .map((c) => `"${c}":[${upsert[c].join(',')}]`);
    if (ups.length > 0) parts.push(`"upsert":{${ups.join(',')}}`);
    const rms = (Object.keys(remove) as CollectionName[])
      .filter((c) => remove[c].length > 0)
      .map((c) => `"${c}":${JSON.stringify(remove[c])}`);
    if (rms.length > 0) parts.push(`"remove":{${rms.join(',')}}`);
    return parts.length === 0 ? undefined : `{${parts.join(',')}}`;
  }
}

/**
 * Brings `sent` (name to JSON as last sent) up to `views`, noting the JSON
 * of each new or changed view in `upserts` and the name of each gone one
 * in `removes`.
 */
function diffViews<V>(
  sent: Map<string, string>,
  views: readonly V[],
  nameOf: (v: V) => string,
  upserts: string[],
  removes: string[],
): void {
  const names = new Set<string>();
  for (const view of views) {
    const name = nameOf(view);
    names.add(name);
    const json = JSON.stringify(view);
    if (sent.get(name) === json) continue;
    sent.set(name, json);
    upserts.push(json);
  }
  for (const name of sent.keys()) {
    if (!names.has(name)) {
      sent.delete(name);
      removes.push(name);
    }
  }
}

/** One server-sent event; `data` is JSON, which has no line breaks. */
function frame(event: string, data: string): string {
  return `event: ${event}\ndata: ${data}\n\n`;
}
