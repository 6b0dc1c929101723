/**
 * An OTLP/HTTP trace receiver on loopback for tests: a process started with
 * {@link OtlpReceiver.env} (the standard `OTEL_*` variables) exports its
 * spans here in the JSON encoding, and the test reads them back decoded,
 * with the raw bodies kept for secret checks.
 *
 * @module
 */
import { createServer, type IncomingMessage } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { listen } from './loopback.js';

/** An attribute value as OTLP's `AnyValue` carries it, decoded. */
export type AttributeValue =
  | string
  | number
  | boolean
  | null
  | readonly AttributeValue[]
  | { readonly [key: string]: AttributeValue };

/** One span as it arrived, its attributes and its resource's decoded to plain objects. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** The parent's span ID; `''` for the root of a trace. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's `SpanKind`: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  /** The span's events, in order, each with its name and attributes. */
  readonly events: ReadonlyArray<{
    readonly name: string;
    readonly attributes: Readonly<Record<string, AttributeValue>>;
  }>;
  /** OTLP's `StatusCode`: 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message?: string | undefined };
  /** The instrumentation scope's name. */
  readonly scope: string;
  /** The attributes of the resource that exported the span (`service.name`, ...). */
  readonly resource: Readonly<Record<string, AttributeValue>>;
}

/** A running receiver; {@link startOtlpReceiver} starts one. */
export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`, the value of `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  readonly url: string;
  /**
   * The standard variables that make an OpenTelemetry SDK export its spans
   * here: this endpoint, the JSON encoding, and a 50 ms batch delay.
   */
  readonly env: Readonly<Record<string, string>>;
  /** Each export request as `<method> <path> <content-type>`, in order. */
  readonly requests: readonly string[];
  /** What could not be decoded, one line each (an empty list when every request was OTLP JSON). */
  readonly problems: readonly string[];
  /** Every span received so far, in arrival order. */
  spans(): ReceivedSpan[];
  /** Every request body as received (after any gzip), for looking for what must never be exported. */
  text(): string;
  /** Resolves with the first span `pick` accepts, waiting up to `ms` for it to arrive. */
  waitForSpan(pick: (span: ReceivedSpan) => boolean, ms?: number): Promise<ReceivedSpan>;
  close(): Promise<void>;
}

interface OtlpKeyValue {
  key: string;
  value?: OtlpAnyValue;
}

interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  bytesValue?: string;
  arrayValue?: { values?: OtlpAnyValue[] };
  kvlistValue?: { values?: OtlpKeyValue[] };
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  attributes?: OtlpKeyValue[];
  events?: Array<{ name?: string; attributes?: OtlpKeyValue[] }>;
  status?: { code?: number; message?: string };
}

interface ExportTraceServiceRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpKeyValue[] };
    scopeSpans?: Array<{ scope?: { name?: string }; spans?: OtlpSpan[] }>;
  }>;
}

/** An `AnyValue` decoded: 64-bit integers sent as strings become numbers. */
function decodeValue(v: OtlpAnyValue | undefined): AttributeValue {
  if (v === undefined) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.bytesValue !== undefined) return v.bytesValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(decodeValue);
  if (v.kvlistValue !== undefined) return decodeAttributes(v.kvlistValue.values);
  return null;
}

function decodeAttributes(kvs: OtlpKeyValue[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of kvs ?? []) out[kv.key] = decodeValue(kv.value);
  return out;
}

/** The spans of one `ExportTraceServiceRequest` in the JSON encoding. */
export function decodeTraceExport(body: string): ReceivedSpan[] {
  const msg = JSON.parse(body) as ExportTraceServiceRequest;
  const out: ReceivedSpan[] = [];
  for (const rs of msg.resourceSpans ?? []) {
    const resource = decodeAttributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind ?? 0,
          attributes: decodeAttributes(s.attributes),
          events: (s.events ?? []).map((e) => ({
            name: e.name ?? '',
            attributes: decodeAttributes(e.attributes),
          })),
          status: { code: s.status?.code ?? 0, message: s.status?.message },
          scope: ss.scope?.name ?? '',
          resource,
        });
      }
    }
  }
  return out;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks);
  return (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
}

/**
 * Starts a receiver of OTLP/HTTP trace exports (`POST /v1/traces`, JSON) on
 * 127.0.0.1 and a free port. It answers each export with an empty success;
 * a body it cannot decode gets a 400 and a line in `problems`.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: string[] = [];
  const problems: string[] = [];
  const bodies: string[] = [];
  const spans: ReceivedSpan[] = [];
  const waiters = new Set<() => void>();
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
    readBody(req).then(
      (body) => {
        bodies.push(body);
        try {
          if (req.method !== 'POST' || req.url !== '/v1/traces') {
            throw new Error(`not an OTLP trace export: ${req.method} ${req.url}`);
          }
          spans.push(...decodeTraceExport(body));
        } catch (err) {
          problems.push(err instanceof Error ? err.message : String(err));
          res.writeHead(400, { 'content-type': 'application/json' }).end('{}');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        for (const w of waiters) w();
      },
      (err: unknown) => {
        problems.push(`unreadable body: ${String(err)}`);
        res.writeHead(400).end();
      },
    );
  });
  const port = await listen(server);
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    env: Object.freeze({
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    }),
    requests,
    problems,
    spans: () => [...spans],
    text: () => bodies.join('\n'),
    async waitForSpan(pick, ms = 30_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const found = spans.find(pick);
        if (found !== undefined) return found;
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new Error(
            `no such span within ${ms} ms; received: ${spans.map((s) => s.name).join(', ') || 'none'}`,
          );
        }
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            waiters.delete(done);
            resolve();
          };
          const timer = setTimeout(done, left);
          waiters.add(done);
        });
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
