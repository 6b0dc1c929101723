/**
 * The operator's process telemetry: Prometheus metrics and the `/metrics`,
 * `/healthz` and `/readyz` endpoints.
 *
 * @module
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Meter } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { parseListenAddress } from './listen.js';

export { parseListenAddress } from './listen.js';

/** A meter whose instruments are exported in the Prometheus text format. */
export interface PrometheusMetrics {
  /** The meter to create instruments on. */
  readonly meter: Meter;
  /** The exporter, which serves no HTTP of its own. */
  readonly exporter: PrometheusExporter;
  /** The metrics text, as `/metrics` serves it. */
  text(): Promise<string>;
  /** Stops the meter provider. */
  shutdown(): Promise<void>;
}

/** Builds a MeterProvider with a Prometheus exporter that does not start its own server. */
export function createPrometheusMetrics(): PrometheusMetrics {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ readers: [exporter] });
  const meter = provider.getMeter('@proxy-op/operator');
  return {
    meter,
    exporter,
    text: () =>
      new Promise((resolve, reject) => {
        const chunks: string[] = [];
        const res = {
          statusCode: 200,
          setHeader() {},
          end(body?: string) {
            if (body !== undefined) chunks.push(body);
            resolve(chunks.join(''));
          },
          write(body: string) {
            chunks.push(body);
          },
        };
        try {
          exporter.getMetricsRequestHandler({} as never, res as never);
        } catch (err) {
          reject(err);
        }
      }),
    shutdown: () => provider.shutdown(),
  };
}

/**
 * Serves `/metrics` (Prometheus text), `/healthz` (200 while the process
 * runs) and `/readyz` (200 once `ready()` says so, 503 before). Resolves
 * with the server and the address it listens on.
 */
export async function startHttpServer(
  address: string,
  metrics: PrometheusMetrics,
  ready: () => boolean,
): Promise<{ server: Server; url: string }> {
  const { host, port } = parseListenAddress(address);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics') {
      metrics.exporter.getMetricsRequestHandler(req, res);
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (path === '/readyz') {
      const ok = ready();
      res
        .writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' })
        .end(ok ? 'ok\n' : 'not ready\n');
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  const h = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return { server, url: `http://${h}:${a.port}` };
}
