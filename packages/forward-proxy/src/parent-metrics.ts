/**
 * The gateway's metrics in the Prometheus text format (0.0.4): what each
 * parent has carried, and the work held while the gateway has no parent.
 * Labelled by name, never by credential.
 *
 * @module
 */
import { now as clock } from './clock.js';
import type { ParentSet, ParentStats } from './parents.js';

/** Escapes a label value of the Prometheus text format. */
function label(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/**
 * The parents' stats in the Prometheus text format (0.0.4): per parent,
 * requests, tunnels, failures and bytes (counters), in flight and
 * availability (gauges), and the latency to the answer or the tunnel's
 * opening (a histogram in seconds), and the work held for an upstream
 * (`proxy_op_gateway_waiting`). Labelled by name, never by credential.
 */
export function metricsText(parents: ParentSet): string {
  const stats = parents.stats();
  const lines: string[] = [
    ...banLines(parents),
    '# HELP proxy_op_gateway_waiting Requests, tunnels and SOCKS5 connections held for an upstream.',
    '# TYPE proxy_op_gateway_waiting gauge',
    `proxy_op_gateway_waiting ${parents.waiting}`,
  ];
  const family = (
    name: string,
    type: 'counter' | 'gauge',
    help: string,
    value: (s: ParentStats) => number,
  ) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const s of stats) lines.push(`${name}{upstream="${label(s.name)}"} ${value(s)}`);
  };
  const p = 'proxy_op_gateway_upstream';
  family(
    `${p}_requests_total`,
    'counter',
    'HTTP requests sent to the upstream.',
    (s) => s.requests,
  );
  family(
    `${p}_tunnels_total`,
    'counter',
    'CONNECT tunnels opened through the upstream.',
    (s) => s.tunnels,
  );
  family(
    `${p}_failures_total`,
    'counter',
    'Requests and tunnels the upstream failed before an answer.',
    (s) => s.failures,
  );
  family(
    `${p}_sent_bytes_total`,
    'counter',
    'Bytes of bodies and tunnels sent to the upstream.',
    (s) => s.bytesOut,
  );
  family(
    `${p}_received_bytes_total`,
    'counter',
    'Bytes of bodies and tunnels received from the upstream.',
    (s) => s.bytesIn,
  );
  family(
    `${p}_in_flight`,
    'gauge',
    'Requests and tunnels through the upstream now.',
    (s) => s.inFlight,
  );
  family(`${p}_available`, 'gauge', '1 while the upstream takes new requests.', (s) =>
    s.available ? 1 : 0,
  );
  const h = `${p}_latency_seconds`;
  lines.push(
    `# HELP ${h} Time to the upstream's answer head or tunnel opening.`,
    `# TYPE ${h} histogram`,
  );
  for (const s of stats) {
    const l = `upstream="${label(s.name)}"`;
    let sum = 0;
    s.latency.buckets.forEach((b, i) => {
      sum += s.latency.counts[i] ?? 0;
      lines.push(`${h}_bucket{${l},le="${b / 1000}"} ${sum}`);
    });
    const all = s.latency.counts.reduce((a, b) => a + b, 0);
    lines.push(
      `${h}_bucket{${l},le="+Inf"} ${all}`,
      `${h}_sum{${l}} ${s.latencySumMs / 1000}`,
      `${h}_count{${l}} ${all}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The bans counted (by host and rule) and the quarantines in force (by upstream). */
function banLines(parents: ParentSet): string[] {
  const lines = [
    '# HELP proxy_op_gateway_bans_total Bans seen by a rule, or reported, by target host and rule.',
    '# TYPE proxy_op_gateway_bans_total counter',
  ];
  for (const c of parents.bans.counts()) {
    lines.push(
      `proxy_op_gateway_bans_total{host="${label(c.host)}",rule="${label(c.rule)}"} ${c.count}`,
    );
  }
  const held = new Map<string, number>();
  for (const q of parents.bans.inForce(clock()))
    held.set(q.upstream, (held.get(q.upstream) ?? 0) + 1);
  lines.push(
    '# HELP proxy_op_gateway_quarantined_hosts Target hosts each upstream is kept from now.',
    '# TYPE proxy_op_gateway_quarantined_hosts gauge',
  );
  for (const [upstream, n] of held) {
    lines.push(`proxy_op_gateway_quarantined_hosts{upstream="${label(upstream)}"} ${n}`);
  }
  return lines;
}
