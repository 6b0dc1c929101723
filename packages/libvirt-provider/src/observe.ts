/**
 * What the engine wraps around every connection it opens, whichever
 * transport opened it: a budget per call and, through the contract's
 * `observeSeam`, one `<prefix>.<call>` child span and one debug line per
 * call carrying only safe identifiers (names, never XML, bodies or keys).
 *
 * @module
 */
import type { Tracer } from '@opentelemetry/api';
import { type Logger, observeSeam } from '@proxy-op/contract';
import { LibvirtError, RpcError } from '@proxy-op/libvirt-rpc';
import { BudgetError } from './classify.js';
import { type LibvirtConnection, type LibvirtSeam, SEAM_METHODS } from './seam.js';

const METHODS: ReadonlySet<string> = new Set(SEAM_METHODS);

/** Options of {@link decorateConnection}. */
export interface DecorateOptions {
  /** Span and log prefix (`kvm2`). */
  readonly prefix: string;
  /** The configured provider name, on every line. */
  readonly provider: string;
  /** The host's config name, on every span and line. */
  readonly host: string;
  readonly logger: Logger;
  readonly tracer: Tracer;
  /** Budget of one call, in ms. */
  readonly callMs: number;
  /** Budget of one volume upload, in ms. */
  readonly uploadMs: number;
}

function handleName(v: unknown): string | undefined {
  const name = (v as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : undefined;
}

/** The safe identifiers of a call: host, domain, pool, volume, source. Never XML or data. */
export function safeFields(
  host: string,
  method: string,
  args: readonly unknown[],
): Record<string, string | number> {
  const out: Record<string, string | number> = { host };
  const a = args[0];
  if (typeof a !== 'object' || a === null) return out;
  const r = a as Record<string, unknown>;
  const dom = handleName(r.dom);
  if (dom !== undefined) out.domain = dom;
  const pool = handleName(r.pool);
  if (pool !== undefined) out.pool = pool;
  const vol = r.vol as { name?: unknown; pool?: unknown } | undefined;
  if (vol !== undefined && vol !== null) {
    if (typeof vol.name === 'string') out.volume = vol.name;
    if (typeof vol.pool === 'string') out.pool = vol.pool;
  }
  if (typeof r.name === 'string') {
    if (method.startsWith('domain')) out.domain = r.name;
    else if (method === 'storagePoolLookupByName') out.pool = r.name;
    else out.volume = r.name;
  }
  if (typeof r.xml === 'string') {
    // Only the name out of the XML: the rest is for trace lines.
    const name = /<name>([^<]{1,255})<\/name>/.exec(r.xml)?.[1];
    if (name !== undefined) out[method === 'domainDefineXml' ? 'domain' : 'volume'] = name;
  }
  if (typeof r.source === 'number') out.source = r.source;
  if (typeof r.length === 'number') out.bytes = r.length;
  return out;
}

/** Safe facts of a failed call: libvirt's code and message, or the wire error's code. */
export function callErrorFields(err: unknown): Record<string, string | number> {
  if (LibvirtError.isInstance(err)) {
    return { error: 'LibvirtError', libvirtCode: err.code, libvirtMessage: err.message };
  }
  if (RpcError.isInstance(err) || BudgetError.isInstance(err)) {
    return { error: err.name, errorCode: err.code };
  }
  return { error: err instanceof Error ? err.name : typeof err };
}

/**
 * The connection with every seam call bounded by its budget (a call past
 * it rejects with a {@link BudgetError}, whatever the transport does) and
 * observed: one `<prefix>.<call>` child span under the caller's span (none
 * without one) and one debug `<prefix> call` line.
 */
export function decorateConnection(conn: LibvirtConnection, o: DecorateOptions): LibvirtConnection {
  const seam = observeSeam(bounded(conn.seam, o.callMs, o.uploadMs), {
    prefix: o.prefix,
    provider: o.provider,
    logger: o.logger,
    tracer: o.tracer,
    fields: (method, args) => safeFields(o.host, method, args),
    errorFields: callErrorFields,
  });
  return {
    seam,
    closed: conn.closed,
    isOpen: () => conn.isOpen(),
    close: () => conn.close(),
  };
}

/** The seam with each call's signal joined to a timeout of its budget. */
function bounded(seam: LibvirtSeam, callMs: number, uploadMs: number): LibvirtSeam {
  return new Proxy(seam, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string' || !METHODS.has(prop)) {
        return value;
      }
      const ms = prop === 'storageVolUpload' ? uploadMs : callMs;
      return async (args: unknown, signal: AbortSignal) => {
        const timeout = AbortSignal.timeout(ms);
        const joined = AbortSignal.any([signal, timeout]);
        try {
          return await (value as (a: unknown, s: AbortSignal) => Promise<unknown>).call(
            target,
            args,
            joined,
          );
        } catch (err) {
          if (timeout.aborted && !signal.aborted) throw new BudgetError(prop, ms, { cause: err });
          throw err;
        }
      };
    },
  });
}
