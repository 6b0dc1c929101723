/**
 * The Checker: one target, the API endpoint, checked with a few read
 * requests that prove the token works and the config fits the project:
 * every configured location exists (its country is read from the API),
 * every server type exists and is offered in every configured location,
 * and every catalogue image exists for the architecture of every server
 * type. The shell answers `Timeout` for a round that ended or a call past
 * its budget; `failed` names the reason of every other failure it knows.
 *
 * @module
 */
import {
  type CheckAnswer,
  type CheckContext,
  type CheckTarget,
  type ImplementationChecker,
  Reason,
} from '@proxy-op/contract';
import type { ServerTypeView } from './answers.js';
import { HetznerApiError, TokenError, TransportError } from './errors.js';
import type { Runtime } from './runtime.js';

/** The `hetzner` provider's own Checker reasons, each fixed by a different admin action. */
export const HetznerReason = Object.freeze({
  /** The token file is missing, unreadable or empty: mount the Secret. */
  CredentialsUnavailable: 'CredentialsUnavailable',
  /** The API answered 429: too many requests for the project; wait, or make fewer. */
  RateLimited: 'RateLimited',
  /** A configured location does not exist: fix `locations`. */
  LocationNotFound: 'LocationNotFound',
  /** A configured server type does not exist: fix `serverTypes`. */
  ServerTypeNotFound: 'ServerTypeNotFound',
  /** A server type is not offered in a configured location: change `serverTypes` or `locations`. */
  ServerTypeNotOffered: 'ServerTypeNotOffered',
  /** A catalogue image does not exist, or not for a server type's architecture: fix `images`. */
  ImageNotFound: 'ImageNotFound',
} as const);

/** The Checker over `rt`: the endpoint, probed with the look-ups of the config's names. */
export function checker(rt: Runtime): ImplementationChecker {
  return {
    targets: () => targets(rt),
    check: (_target, ctx) => check(rt, ctx),
    failed,
  };
}

/** The Checker's one target: the API, with its config facts. */
function targets(rt: Runtime): CheckTarget[] {
  const c = rt.config;
  return [
    {
      target: new URL(c.endpoint).host,
      address: c.endpoint,
      details: {
        endpoint: c.endpoint,
        locations: c.locations.join(','),
        serverTypes: c.serverTypes.join(','),
        images: Object.values(c.images).join(','),
      },
    },
  ];
}

async function check(rt: Runtime, ctx: CheckContext): Promise<CheckAnswer> {
  const c = rt.config;
  const locations = await rt.seam.listLocations(ctx.signal);
  const countries = new Map(locations.map((l) => [l.name, l.country]));
  const noLocation = c.locations.filter((l) => !countries.has(l));
  ctx.details.countries = c.locations.map((l) => `${l}=${countries.get(l) ?? '?'}`).join(',');
  if (noLocation.length > 0) {
    return {
      reason: HetznerReason.LocationNotFound,
      message: `no location ${noLocation.join(', ')} in this project's API; the API has ${[...countries.keys()].join(', ')}`,
    };
  }

  const types = new Map<string, ServerTypeView>();
  for (let page = 1; ; ) {
    const { items, nextPage } = await rt.seam.listServerTypes(page, ctx.signal);
    for (const t of items) types.set(t.name, t);
    if (nextPage === undefined || nextPage <= page) break;
    page = nextPage;
  }
  const noType = c.serverTypes.filter((t) => !types.has(t));
  if (noType.length > 0) {
    return {
      reason: HetznerReason.ServerTypeNotFound,
      message: `no server type ${noType.join(', ')}; fix hetzner.serverTypes`,
    };
  }
  const chosen = c.serverTypes.map((t) => types.get(t) as ServerTypeView);
  ctx.details.architectures = chosen.map((t) => `${t.name}=${t.architecture}`).join(',');
  const notOffered = chosen.flatMap((t) =>
    c.locations.filter((l) => !t.locations.includes(l)).map((l) => `${t.name} in ${l}`),
  );
  if (notOffered.length > 0) {
    return {
      reason: HetznerReason.ServerTypeNotOffered,
      message: `not offered: ${notOffered.join(', ')}; change hetzner.serverTypes or hetzner.locations`,
    };
  }

  const architectures = [...new Set(chosen.map((t) => t.architecture))];
  const missing: string[] = [];
  for (const [key, image] of Object.entries(c.images)) {
    const found = (await rt.seam.findImages(image, ctx.signal)).filter(
      (i) => i.status === 'available',
    );
    for (const arch of architectures) {
      if (!found.some((i) => i.architecture === arch)) {
        missing.push(`${key} (${image}) for ${arch}`);
      }
    }
  }
  if (missing.length > 0) {
    return {
      reason: HetznerReason.ImageNotFound,
      message: `no available image ${missing.join(', ')}; fix hetzner.images`,
    };
  }
  return {
    reason: Reason.Reachable,
    message: `the token works; ${c.locations.length} location(s), ${c.serverTypes.length} server type(s) and ${Object.keys(c.images).length} image(s) fit`,
  };
}

/**
 * The reason of a failed look-up: an unusable token file; 401
 * Unauthorized; 403 `forbidden` Forbidden; 429 RateLimited; no answer at all
 * Unreachable. The status and API code go into the details. Anything else
 * is left to the shell (`APIError`).
 */
function failed(err: unknown, ctx: CheckContext): CheckAnswer | undefined {
  if (TokenError.isInstance(err)) {
    return { reason: HetznerReason.CredentialsUnavailable, message: err.message };
  }
  if (TransportError.isInstance(err)) {
    if (err.errno !== undefined) ctx.details.errno = err.errno;
    return { reason: Reason.Unreachable, message: err.message };
  }
  if (!HetznerApiError.isInstance(err)) return undefined;
  ctx.details.httpStatus = err.httpStatus;
  ctx.details.apiCode = err.apiCode;
  switch (err.httpStatus) {
    case 401:
      return { reason: Reason.Unauthorized, message: err.message };
    case 403:
      // 403 is also `maintenance`: only a refused permission is Forbidden.
      return err.apiCode === 'forbidden'
        ? { reason: Reason.Forbidden, message: err.message }
        : undefined;
    case 429:
      return { reason: HetznerReason.RateLimited, message: err.message };
    default:
      return undefined;
  }
}
