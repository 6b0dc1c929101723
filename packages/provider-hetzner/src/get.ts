/**
 * Get: the server read by name (one request, `GET /servers?name=`; a name
 * nobody has is NotFound, profile `notFound: list-and-miss`), its mark,
 * state, address, IPv6 range and location. A server Hetzner Cloud holds
 * locked is Transient until it is released.
 *
 * @module
 */
import type { Instance, Mark, OperationContext } from '@proxy-op/contract';
import type { ServerView } from './answers.js';
import { formatId, type HetznerId } from './id.js';
import { readMark } from './labels.js';
import type { Runtime } from './runtime.js';
import { addressOf, ipv6RangeOf, locationOf, mapState } from './state.js';

/** Reads the server back from the API. */
export async function getInstance(
  rt: Runtime,
  id: HetznerId,
  ctx: OperationContext,
): Promise<Instance> {
  const server = await rt.seam.findServer(id.name, ctx.signal);
  if (server === undefined) throw ctx.notFound(`server ${id.name} does not exist`);
  const mark = readMark(server.labels, server.created);
  if (mark === undefined) throw ctx.notFound(`server ${id.name} is not managed by proxy-op`);
  if (server.locked) {
    throw ctx.transient(
      `server ${id.name} is locked by Hetzner Cloud; try again once it is released`,
    );
  }
  const inst = instanceOf(server, mark);
  rt.log.trace(
    { name: id.name, status: server.status, state: inst.state, ip: inst.ip },
    'hetzner server read',
  );
  return inst;
}

/**
 * The instance a server stands for: its state, and for a Running one its
 * IPv4 address and IPv6 range; its mark and location.
 */
export function instanceOf(server: ServerView, mark: Mark): Instance {
  const address = addressOf(server);
  const state = mapState(server.status, address);
  const running = state === 'Running';
  const range = running ? ipv6RangeOf(server) : undefined;
  return {
    id: formatId({ name: server.name }),
    uid: mark.uid,
    createdAt: mark.createdAt,
    state,
    ip: running ? address : undefined,
    installation: mark.installation,
    location: locationOf(server),
    ...(range === undefined ? {} : { ipv6Range: range }),
  };
}
