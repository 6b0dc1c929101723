/**
 * What a probe leaves behind for the admin: a span `proxy.probe` (under
 * the reconcile trace that last saw the instance) with an event per step,
 * `proxy_op_probe_duration_seconds` per provider, check and step (and the
 * whole probe as check `probe`, step `total`), `proxy_op_probe_failures_total`
 * per provider and the check and step that failed, and
 * `proxy_op_remediation_allowed` per provider.
 *
 * @module
 */
import {
  type Context,
  type Meter,
  metrics,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { ProbeResult } from '@proxy-op/probe';
import { describeFailure } from './record.js';

/** The span, the histogram, the counter and the gauge of the probes. */
export class ProbeInstruments {
  readonly #tracer: Tracer;
  readonly #duration;
  readonly #failures;

  /** `allowed` says, per provider probed, whether its short-circuit allows remediation. */
  constructor(
    tracer: Tracer | undefined,
    meter: Meter | undefined,
    allowed: () => Iterable<[string, boolean]>,
  ) {
    this.#tracer = tracer ?? trace.getTracer('@proxy-op/operator');
    const m = meter ?? metrics.getMeter('@proxy-op/operator');
    this.#duration = m.createHistogram('proxy_op.probe.duration_seconds', {
      description: 'Probe steps through the data plane, by provider, check and step',
      unit: 's',
    });
    this.#failures = m.createCounter('proxy_op.probe.failures', {
      description: 'Failed probes, by provider and the check and step that failed',
    });
    const gauge = m.createObservableGauge('proxy_op.remediation.allowed', {
      description:
        '0 while more of a provider’s probed proxies fail than its probe.maxUnhealthy allows',
    });
    gauge.addCallback((r) => {
      for (const [provider, ok] of allowed()) r.observe(ok ? 1 : 0, { provider });
    });
  }

  /**
   * Runs one probe (`run`) as a span under `parent`, and records its steps;
   * resolves with its result (undefined when it was aborted).
   */
  traced(
    parent: Context,
    attrs: { key: string; provider: string; target: string },
    run: () => Promise<ProbeResult | undefined>,
  ): Promise<ProbeResult | undefined> {
    return this.#tracer.startActiveSpan(
      'proxy.probe',
      {
        attributes: {
          'proxy_op.proxy': attrs.key,
          'proxy_op.provider': attrs.provider,
          'proxy_op.probe.target': attrs.target,
        },
      },
      parent,
      async (span) => {
        try {
          const r = await run();
          if (r === undefined) return undefined;
          const by = { provider: attrs.provider };
          for (const s of r.steps) {
            span.addEvent(`${s.check}.${s.step}`, { ok: s.ok, ms: s.ms, message: s.message });
            this.#duration.record(s.ms / 1000, { ...by, check: s.check, step: s.step });
          }
          this.#duration.record(r.latency.totalMs / 1000, { ...by, check: 'probe', step: 'total' });
          span.setAttribute('proxy_op.probe.ok', r.ok);
          if (r.egressIP !== undefined) span.setAttribute('proxy_op.probe.egress_ip', r.egressIP);
          if (r.failure !== undefined) {
            this.#failures.add(1, { ...by, check: r.failure.check, step: r.failure.step });
            span.setAttribute('proxy_op.probe.failed_step', `${r.failure.check}.${r.failure.step}`);
            span.setStatus({ code: SpanStatusCode.ERROR, message: describeFailure(r.failure) });
          }
          return r;
        } finally {
          span.end();
        }
      },
    );
  }
}
