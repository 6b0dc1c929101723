/**
 * The status page as `run` starts it: on `--status-listen` (not at all with
 * `off`), its address logged at start. An address that is taken costs the
 * page, not the run: the operator goes on without it, and says so.
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import type { Operator } from '../operator.js';
import { EventLog } from '../page/events.js';
import { type StatusPage, startStatusPage } from '../page/server.js';
import type { StatusPageSource } from '../page/snapshot.js';
import type { PageRole } from '../page/wire.js';
import type { ProviderSet } from '../providers/set.js';
import type { ProxyStore } from '../store.js';

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

/**
 * The store the operator is built over when a page is served: Events it
 * records are kept for the page too. Without a page, the store itself.
 */
export function storeForPage(
  store: ProxyStore,
  page: StatusPage | undefined,
): { store: ProxyStore; events: EventLog | undefined } {
  if (page === undefined) return { store, events: undefined };
  const events = new EventLog({ exists: (key) => store.get(key) !== undefined });
  return { store: events.wrap(store), events };
}

/** What the page shows of a running operator. */
export function pageSource(
  store: ProxyStore,
  providers: ProviderSet,
  operator: Operator,
  events: EventLog | undefined,
  pools?: StatusPageSource['pools'],
): StatusPageSource {
  return { store, providers, probes: operator.probes, events, pools };
}

/** The Pod a leader election identity (`<pod>_<random>`, as `run` makes it) runs in. */
export function podOf(identity: string | undefined): string | undefined {
  return identity?.replace(/_[0-9a-f]{8}$/, '');
}
