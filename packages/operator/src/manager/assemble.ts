/**
 * The status page as `run` starts it: on `--status-listen` (not at all with
 * `off`), its address logged at start. An address that is taken costs the
 * page, not the run: the operator goes on without it, and says so.
 *
 * @module
 */

import type { Meter } from '@opentelemetry/api';
import type { Logger } from '@proxy-op/contract';
import type { ProbeTargetSpec } from '@proxy-op/probe';
import { EventLog } from '../page/events.js';
import { type StatusPage, startStatusPage } from '../page/server.js';
import type { PageRole } from '../page/wire.js';
import { PoolController } from '../pool/controller.js';
import type { PoolGateways } from '../pool/gateway.js';
import type { ProviderSet } from '../providers/set.js';
import { Operator, type OperatorOptions } from '../proxy/controller.js';
import type { CredentialStore } from '../store/credentials.js';
import type { PoolStore } from '../store/pools.js';
import type { ProxyStore } from '../store/proxies.js';

/** Starts the page on `listen`; undefined when it is `off` or the address cannot be had. */
export async function startPage(
  listen: string,
  role: () => PageRole,
  logger: Logger,
): Promise<StatusPage | undefined> {
  if (listen === 'off') return undefined;
  try {
    const page = await startStatusPage({ listen, role, logger });
    logger.info({ statusPage: page.url }, `status page at ${page.url}`);
    return page;
  } catch (err) {
    logger.warn(
      { listen, err: (err as Error).message },
      'the status page cannot listen there; the operator runs without it (choose another address with --status-listen)',
    );
    return undefined;
  }
}

/** The port of a page's URL, for the `kubectl port-forward` line. */
export function pagePort(page: StatusPage | undefined): number | undefined {
  return page === undefined ? undefined : Number(new URL(page.url).port);
}

/** What {@link buildOperator} is given: the stores, the providers, and how the operator runs. */
export interface OperatorParts {
  readonly store: ProxyStore;
  readonly pools: PoolStore;
  readonly providers: ProviderSet;
  readonly credentials: CredentialStore;
  /** Where pools' gateways run (standalone: processes). */
  readonly gateways?: PoolGateways | undefined;
  readonly logger: Logger;
  readonly meter?: Meter | undefined;
  readonly probeTarget?: ProbeTargetSpec | undefined;
  readonly page: StatusPage | undefined;
  readonly opts: OperatorOptions;
}

/**
 * The pool controller and the operator over `store`, as both modes run
 * them: the operator sees the store through the controller (a Proxy's
 * change queues its pool) and, when a page is served, through an Event log
 * the page reads; the page is then given its data.
 */
export function buildOperator(o: OperatorParts): { pools: PoolController; operator: Operator } {
  const pools = new PoolController({
    pools: o.pools,
    proxies: o.store,
    providers: o.providers,
    credentials: o.credentials,
    gateways: o.gateways,
    logger: o.logger,
  });
  let store = pools.observe(o.store);
  let events: EventLog | undefined;
  if (o.page !== undefined) {
    const seen = store;
    events = new EventLog({ exists: (key) => seen.get(key) !== undefined });
    store = events.wrap(seen);
  }
  const operator = new Operator(
    {
      store,
      providers: o.providers,
      logger: o.logger,
      meter: o.meter,
      probeTarget: o.probeTarget,
      credentials: o.credentials,
    },
    o.opts,
  );
  o.page?.serve({
    store,
    providers: o.providers,
    probes: operator.probes,
    events,
    pools: o.pools,
  });
  return { pools, operator };
}

/** The Pod a leader election identity (`<pod>_<random>`, as `run` makes it) runs in. */
export function podOf(identity: string | undefined): string | undefined {
  return identity?.replace(/_[0-9a-f]{8}$/, '');
}
