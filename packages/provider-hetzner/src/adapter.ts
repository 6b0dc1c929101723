/**
 * The production adapter of the seam: each method is one request of the
 * Hetzner Cloud API through {@link HetznerClient}, its answer read into
 * the views of `answers.ts`. A 404 is undefined where the seam says so;
 * every other error answer is thrown as it came.
 *
 * @module
 */
import type { SecretSet } from '@proxy-op/contract';
import {
  member,
  readAction,
  readFirewall,
  readImage,
  readLocation,
  readPage,
  readServer,
  readServerType,
} from './answers.js';
import { HetznerClient } from './client.js';
import { HetznerApiError } from './errors.js';
import type { HetznerSeam } from './seam.js';

/** Items per page of a listing: the API's most. */
export const PER_PAGE = 50;

/** The production seam and the client under it (to close). */
export interface HetznerAdapter {
  readonly seam: HetznerSeam;
  close(): Promise<void>;
}

/** What the adapter is built with. */
export interface AdapterOptions {
  readonly endpoint: string;
  readonly tokenFile: string;
  readonly secrets: SecretSet;
}

/** Undefined for a 404 (`not_found`); rethrows anything else. */
function absentOn404(err: unknown): undefined {
  if (HetznerApiError.isInstance(err) && err.httpStatus === 404) return undefined;
  throw err;
}

/** The seam over the API. Building it makes no request. */
export function createHetznerAdapter(o: AdapterOptions): HetznerAdapter {
  const client = new HetznerClient(o);
  const seam: HetznerSeam = {
    async findServer(name, signal) {
      const body = await client.request({
        method: 'GET',
        path: '/servers',
        query: { name },
        signal,
      });
      return readPage(body, 'servers', readServer).items.find((s) => s.name === name);
    },
    async getServer(id, signal) {
      const body = await client
        .request({ method: 'GET', path: `/servers/${id}`, signal })
        .catch(absentOn404);
      return body === undefined ? undefined : readServer(member(body, 'server'));
    },
    async createServer(server, signal) {
      const body = await client.request({ method: 'POST', path: '/servers', body: server, signal });
      return {
        server: readServer(member(body, 'server')),
        action: readAction(member(body, 'action')),
      };
    },
    async deleteServer(id, signal) {
      const body = await client
        .request({ method: 'DELETE', path: `/servers/${id}`, signal })
        .catch(absentOn404);
      return body === undefined ? undefined : readAction(member(body, 'action'));
    },
    async listServers(selector, page, signal) {
      const body = await client.request({
        method: 'GET',
        path: '/servers',
        query: { label_selector: selector, page, per_page: PER_PAGE },
        signal,
      });
      return readPage(body, 'servers', readServer);
    },
    async findFirewall(name, signal) {
      const body = await client.request({
        method: 'GET',
        path: '/firewalls',
        query: { name },
        signal,
      });
      return readPage(body, 'firewalls', readFirewall).items.find((f) => f.name === name);
    },
    async createFirewall(firewall, signal) {
      const body = await client.request({
        method: 'POST',
        path: '/firewalls',
        body: firewall,
        signal,
      });
      return readFirewall(member(body, 'firewall'));
    },
    async setFirewallRules(id, rules, signal) {
      await client.request({
        method: 'POST',
        path: `/firewalls/${id}/actions/set_rules`,
        body: { rules },
        signal,
      });
    },
    async deleteFirewall(id, signal) {
      await client
        .request({ method: 'DELETE', path: `/firewalls/${id}`, signal })
        .catch(absentOn404);
    },
    async listLocations(signal) {
      const body = await client.request({
        method: 'GET',
        path: '/locations',
        query: { per_page: PER_PAGE },
        signal,
      });
      return [...readPage(body, 'locations', readLocation).items];
    },
    async listServerTypes(page, signal) {
      const body = await client.request({
        method: 'GET',
        path: '/server_types',
        query: { page, per_page: PER_PAGE },
        signal,
      });
      return readPage(body, 'server_types', readServerType);
    },
    async findImages(image, signal) {
      if (/^\d+$/.test(image)) {
        const body = await client
          .request({ method: 'GET', path: `/images/${image}`, signal })
          .catch(absentOn404);
        return body === undefined ? [] : [readImage(member(body, 'image'))];
      }
      const body = await client.request({
        method: 'GET',
        path: '/images',
        query: { name: image, per_page: PER_PAGE },
        signal,
      });
      return [...readPage(body, 'images', readImage).items];
    },
  };
  return { seam, close: () => client.close() };
}
