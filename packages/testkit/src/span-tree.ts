/**
 * Received spans as trees (parent, children, descendants, root, orphans)
 * and the check every provider's trace test makes: each operation span of
 * the contract (§9) carries the provider's name, type and operation, sits
 * under the trace's root, and has the provider's backend calls beneath it;
 * no backend call span is outside an operation span.
 *
 * @module
 */
import type { AttributeValue, ReceivedSpan } from './otlp.js';

const key = (traceId: string, spanId: string) => `${traceId}/${spanId}`;

/** The spans of one or more traces, linked by their parent IDs. */
export class SpanTree {
  readonly #byId = new Map<string, ReceivedSpan>();
  readonly #children = new Map<string, ReceivedSpan[]>();
  /** The spans, in the order given. */
  readonly spans: readonly ReceivedSpan[];

  constructor(spans: readonly ReceivedSpan[]) {
    this.spans = [...spans];
    for (const s of spans) this.#byId.set(key(s.traceId, s.spanId), s);
    for (const s of spans) {
      if (s.parentSpanId === '') continue;
      const k = key(s.traceId, s.parentSpanId);
      const list = this.#children.get(k) ?? [];
      list.push(s);
      this.#children.set(k, list);
    }
  }

  /** The spans named `name`. */
  named(name: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.name === name);
  }

  /** The span's parent, or undefined for a root or a span whose parent never arrived. */
  parentOf(span: ReceivedSpan): ReceivedSpan | undefined {
    return span.parentSpanId === ''
      ? undefined
      : this.#byId.get(key(span.traceId, span.parentSpanId));
  }

  /** The span's direct children. */
  childrenOf(span: ReceivedSpan): ReceivedSpan[] {
    return [...(this.#children.get(key(span.traceId, span.spanId)) ?? [])];
  }

  /** Every span beneath `span`, at any depth, depth first. */
  descendantsOf(span: ReceivedSpan): ReceivedSpan[] {
    const out: ReceivedSpan[] = [];
    const walk = (s: ReceivedSpan) => {
      for (const c of this.childrenOf(s)) {
        out.push(c);
        walk(c);
      }
    };
    walk(span);
    return out;
  }

  /** The spans above `span`, its parent first. */
  ancestorsOf(span: ReceivedSpan): ReceivedSpan[] {
    const out: ReceivedSpan[] = [];
    for (let p = this.parentOf(span); p !== undefined; p = this.parentOf(p)) out.push(p);
    return out;
  }

  /** The top of the span's parent chain (the span itself when it has no parent). */
  rootOf(span: ReceivedSpan): ReceivedSpan {
    return this.ancestorsOf(span).at(-1) ?? span;
  }

  /** The spans that name a parent which was never received. */
  orphans(): ReceivedSpan[] {
    return this.spans.filter((s) => s.parentSpanId !== '' && this.parentOf(s) === undefined);
  }
}

/** The operations of the contract's operation spans (`provider.<op>`). */
export type TracedOperation = 'create' | 'get' | 'delete' | 'list';

/** What {@link providerTraceReport} holds a provider's spans to. */
export interface ProviderTraceExpectation {
  /** The configured provider name (`proxy_op.provider.name`). */
  readonly provider: string;
  /** The provider's type (`proxy_op.provider.type`). */
  readonly type: string;
  /**
   * How every backend call span's name starts: `kvm2.` for the seam's
   * `kvm2.domainDefineXml`, `HTTP ` for an HTTP client's `HTTP POST`.
   */
  readonly callPrefix: string;
  /** The operations that must be there, each with backend calls beneath it. */
  readonly operations: readonly TracedOperation[];
  /** The name every operation span's trace root has (the operator's `proxy.reconcile`). */
  readonly root: string;
  /** The instance ID the Delete spans must carry (`proxy_op.instance.id`), when known. */
  readonly instanceId?: string | undefined;
}

/** One operation span and the backend calls beneath it. */
export interface TracedCall {
  readonly span: ReceivedSpan;
  /** The backend call spans beneath it (any depth), depth first. */
  readonly calls: readonly ReceivedSpan[];
}

/** What {@link providerTraceReport} found. */
export interface ProviderTraceReport {
  /** What does not hold, a sentence each; empty when the spans are as the contract says. */
  readonly problems: readonly string[];
  /** Every operation span of the provider, by operation. */
  readonly operations: Readonly<Record<TracedOperation, readonly TracedCall[]>>;
}

const OPERATION_SPAN = /^(provider\.(create|get|delete|list)|providerhealth\.check)$/;

function describeValue(v: AttributeValue | undefined): string {
  return v === undefined ? 'missing' : JSON.stringify(v);
}

/**
 * Holds one provider's spans to the contract's §9: for each expected
 * operation, at least one `provider.<op>` span of the provider, each ended
 * without an error and with at least one backend call span (`callPrefix`)
 * beneath it. Every operation span of the provider (a Get may fail: it
 * finds nothing after a Delete) carries `proxy_op.provider.name`,
 * `proxy_op.provider.type`, `proxy_op.operation` and the instance's name
 * (Create) or ID (Delete, Get), under a root named `root` in its own
 * trace. Anywhere in the spans, a backend call span outside every
 * operation span, and a span whose parent never arrived, are problems too.
 */
export function providerTraceReport(
  spans: readonly ReceivedSpan[],
  want: ProviderTraceExpectation,
): ProviderTraceReport {
  const tree = new SpanTree(spans);
  const problems: string[] = [];
  const isCall = (s: ReceivedSpan) => s.name.startsWith(want.callPrefix);
  const ours = (s: ReceivedSpan) => s.attributes['proxy_op.provider.name'] === want.provider;
  const operations: Record<TracedOperation, TracedCall[]> = {
    create: [],
    get: [],
    delete: [],
    list: [],
  };
  for (const op of ['create', 'get', 'delete', 'list'] as const) {
    for (const span of tree.named(`provider.${op}`).filter(ours)) {
      const at = `provider.${op} ${span.spanId}`;
      const a = span.attributes;
      if (a['proxy_op.provider.type'] !== want.type) {
        problems.push(
          `${at}: proxy_op.provider.type ${describeValue(a['proxy_op.provider.type'])}, not "${want.type}"`,
        );
      }
      if (a['proxy_op.operation'] !== op) {
        problems.push(
          `${at}: proxy_op.operation ${describeValue(a['proxy_op.operation'])}, not "${op}"`,
        );
      }
      const instanceKey = op === 'create' ? 'proxy_op.instance.name' : 'proxy_op.instance.id';
      const instance = a[instanceKey];
      if (op !== 'list' && (typeof instance !== 'string' || instance === '')) {
        problems.push(`${at}: ${instanceKey} ${describeValue(instance)}`);
      }
      if (op === 'delete' && want.instanceId !== undefined && instance !== want.instanceId) {
        problems.push(`${at}: ${instanceKey} ${describeValue(instance)}, not "${want.instanceId}"`);
      }
      const expected = want.operations.includes(op);
      if (expected && (span.status.code === 2 || a['proxy_op.error.class'] !== undefined)) {
        problems.push(
          `${at}: failed (${describeValue(a['proxy_op.error.class'])}, ${span.status.message ?? 'no message'})`,
        );
      }
      const root = tree.rootOf(span);
      if (root === span || root.name !== want.root || root.parentSpanId !== '') {
        problems.push(
          `${at}: its trace's root is ${root === span ? 'itself' : `${root.name}`}, not ${want.root}`,
        );
      }
      const calls = tree.descendantsOf(span).filter(isCall);
      if (expected && calls.length === 0) {
        problems.push(`${at}: no backend call (${want.callPrefix}*) beneath it`);
      }
      operations[op].push({ span, calls });
    }
  }
  for (const op of want.operations) {
    if (operations[op].length === 0) problems.push(`no provider.${op} span of ${want.provider}`);
  }
  for (const s of spans.filter(isCall)) {
    if (!tree.ancestorsOf(s).some((p) => OPERATION_SPAN.test(p.name))) {
      problems.push(`${s.name} ${s.spanId}: not beneath an operation span`);
    }
  }
  for (const s of tree.orphans()) {
    problems.push(`${s.name} ${s.spanId}: its parent ${s.parentSpanId} was never received`);
  }
  return { problems, operations };
}
