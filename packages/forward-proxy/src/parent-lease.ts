/**
 * A request's or tunnel's hold on a gateway's parent: which one it asks for
 * (its session, rotation and filter), which it tried, the one carrying it
 * now (counted in flight, and cut when a drain ends), whether it waits for
 * one while the pool is at zero, and the fields that name the parent to
 * the client. The request and the tunnel share it, so both choose, count
 * and answer alike.
 *
 * @module
 */
import type { Parent, ParentSet } from './parents.js';
import { type ConnectionPin, filterOf, noParentsFor, type Steer, steerOf } from './steering.js';
import type { UserParams } from './user-params.js';

/** What choosing a parent came to. */
export type LeaseChoice =
  /** This parent carries it now. */
  | { readonly kind: 'parent'; readonly parent: Parent }
  /** The pool is at zero: wait for a parent ({@link ParentSet.waitForParent}), then choose again. */
  | { readonly kind: 'hold' }
  /** None can: the answer's text (`502`). */
  | { readonly kind: 'none'; readonly text: string };

/** One request's or tunnel's hold on a parent. */
export class ParentLease {
  /** What it asks of the parents; undefined without parents. */
  readonly steer: Steer<Parent> | undefined;
  /** A filter asked of a proxy without parents (refused). */
  readonly #unserved: string | undefined;
  /** Parents tried for it: a failed one is tried once more on another. */
  readonly tried = new Set<Parent>();
  /** The parent carrying it now. */
  parent: Parent | undefined;
  /** The name of the last parent that carried it, for the access log. */
  servedBy: string | undefined;
  #held = false;
  readonly #cut: () => void;

  /**
   * `fallback`: the session the set's policy gives it; `pin`: the client
   * connection's (undefined for a tunnel); `cut`: what ends it when its
   * parent's drain is over.
   */
  constructor(
    parents: ParentSet | undefined,
    o: {
      readonly user: string | undefined;
      readonly params: UserParams | undefined;
      readonly fallback: string | undefined;
      readonly pin: ConnectionPin<Parent> | undefined;
      readonly cut: () => void;
      /** The target host (a quarantine keeps a banned parent from it). */
      readonly host?: string | undefined;
    },
  ) {
    this.steer = parents && steerOf(o.user, o.params, o.fallback, o.pin);
    if (this.steer !== undefined) this.steer.host = o.host;
    const wanted = parents === undefined ? filterOf(o.params) : undefined;
    this.#unserved = wanted === undefined ? undefined : noParentsFor(wanted);
    this.#cut = o.cut;
  }

  /** Why a proxy without parents refuses it (a filter it cannot serve), or undefined. */
  get refusal(): string | undefined {
    return this.#unserved;
  }

  /**
   * Chooses its parent among `parents` (not one tried already), counting it
   * as a `request` or a `tunnel` of it; or says to wait (once) while the
   * pool is at zero, or why none can take it.
   */
  choose(parents: ParentSet, kind: 'request' | 'tunnel'): LeaseChoice {
    const steer = this.steer as Steer<Parent>;
    const p = parents.pick(steer, this.tried);
    if (p === undefined && parents.holds && !this.#held) {
      this.#held = true;
      return { kind: 'hold' };
    }
    if (p === undefined) {
      const banned =
        steer.host !== undefined &&
        parents.hasOther(this.tried, steer.filter) &&
        !parents.hasOther(this.tried, steer.filter, steer.host);
      const text = banned
        ? `every upstream proxy is quarantined for ${steer.host} (banned there); try again later`
        : (parents.unmatched(steer.filter) ?? 'no upstream proxy is available');
      return { kind: 'none', text };
    }
    this.parent = p;
    this.servedBy = p.name;
    this.tried.add(p);
    p.inFlight++;
    if (kind === 'request') p.requests++;
    else p.tunnels++;
    p.live.add(this.#cut);
    return { kind: 'parent', parent: p };
  }

  /** Whether another parent than those tried (and where its filter asks) is available. */
  hasOther(parents: ParentSet | undefined): boolean {
    return parents?.hasOther(this.tried, this.steer?.filter, this.steer?.host) === true;
  }

  /** Lets go of the parent, counting the bytes that went `out` to it and came `back`. */
  leave(out: number, back: number): void {
    const p = this.parent;
    if (p === undefined) return;
    this.parent = undefined;
    p.inFlight--;
    p.live.delete(this.#cut);
    p.bytesOut += out;
    p.bytesIn += back;
  }

  /** The fields naming the parent, and the one its session left when it moved, for the client. */
  fields(): string {
    if (this.parent === undefined) return '';
    const moved = this.steer?.movedFrom;
    const from = moved === undefined ? '' : `X-Proxy-Op-Session-Moved: ${moved}\r\n`;
    return `X-Proxy-Op-Upstream: ${this.parent.name}\r\n${from}`;
  }
}
