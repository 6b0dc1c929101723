/**
 * The status page as `run` starts it: on `--status-listen` (not at all with
 * `off`), its address logged at start. An address that is taken costs the
 * page, not the run: the operator goes on without it, and says so.
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import type { Settings } from '../defaults.js';
import { type StatusPage, startStatusPage } from '../page/server.js';
import type { StreamSettings } from '../page/stream.js';
import type { PageRole } from '../page/wire.js';

/** Starts the page on `listen`; undefined when it is `off` or the address cannot be had. */
export async function startPage(
  settings: Pick<Settings, 'statusListen'> & StreamSettings,
  role: () => PageRole,
  logger: Logger,
): Promise<StatusPage | undefined> {
  const listen = settings.statusListen;
  if (listen === 'off') return undefined;
  try {
    const page = await startStatusPage({ listen, role, logger, settings });
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

/** The Pod a leader election identity (`<pod>_<random>`, as `run` makes it) runs in. */
export function podOf(identity: string | undefined): string | undefined {
  return identity?.replace(/_[0-9a-f]{8}$/, '');
}
