/**
 * The gateway's metrics in the Prometheus text format (0.0.4): what each
 * parent has carried, and the work held while the gateway has no parent.
 * Labelled by name, never by credential.
 *
 * @module
 */
import type { ParentStats } from './parents.js';

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
export function metricsText(stats: readonly ParentStats[], waiting = 0): string {
  const lines: string[] = [
    '# HELP proxy_op_gateway_waiting Requests, tunnels and SOCKS5 connections held for an upstream.',
    '# TYPE proxy_op_gateway_waiting gauge',
    `proxy_op_gateway_waiting ${waiting}`,
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
