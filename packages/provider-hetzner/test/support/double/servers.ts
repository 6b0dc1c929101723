// Test support (not a test file): the `/servers` routes of the Hetzner Cloud API double: list
// (name, label selector, status, paged), get, create (validated as the API validates, with its
// `create_server` action and a `start_server` next action), update (name, labels), delete (a
// `delete_server` action; the server reads `deleting` until it is gone) and the power actions.
import { createGate, type HarnessGate } from '@proxy-op/providertest';
import { invalidField, nameTaken, notFound, Refusal, serverLimit } from './answers.js';
import { DATACENTERS, type Json, LOCATIONS } from './catalogue.js';
import type { Answer, HetznerDouble, Req } from './double.js';
import { actionJson, paginate, type ServerRec } from './store.js';

/** A hostname label, or a hostname of labels (the API takes FQDNs as server names). */
const HOSTNAME =
  /^(?=.{1,253}$)[a-zA-Z0-9](?:[-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$/;

/** The most `user_data` may hold. */
export const MAX_USER_DATA = 32 * 1024;

export class ServerRoutes {
  readonly #d: HetznerDouble;
  readonly #deleteHolds = new Map<string, HarnessGate>();

  constructor(d: HetznerDouble) {
    this.#d = d;
  }

  route(r: Req): Answer {
    const [, id, sub, verb] = r.parts;
    if (id === undefined) {
      if (r.method === 'GET') return this.#list(r);
      if (r.method === 'POST') return this.#create(r.body ?? {});
      throw new Refusal('method_not_allowed', 'method not allowed');
    }
    const server = this.#d.servers.get(Number(id));
    if (server === undefined || !/^\d+$/.test(id)) throw notFound('server', id);
    if (sub === undefined) {
      if (r.method === 'GET') return { status: 200, body: { server: this.#d.serverJson(server) } };
      if (r.method === 'PUT') return this.#update(server, r.body ?? {});
      if (r.method === 'DELETE') return this.#delete(server);
      throw new Refusal('method_not_allowed', 'method not allowed');
    }
    if (sub === 'actions' && verb === undefined && r.method === 'GET') {
      const mine = [...this.#d.actions.values()].filter((a) =>
        a.resources.some((x) => x.type === 'server' && x.id === server.id),
      );
      const page = paginate(mine.map(actionJson), r.query);
      return { status: 200, body: { actions: page.items, meta: { pagination: page.pagination } } };
    }
    if (sub === 'actions' && r.method === 'POST' && verb !== undefined) {
      return this.#power(server, verb);
    }
    throw new Refusal('not_found', 'not found');
  }

  #list(r: Req): Answer {
    let items = [...this.#d.servers.values()].sort((a, b) => a.id - b.id);
    const name = r.query.get('name');
    if (name !== null) items = items.filter((s) => s.name === name);
    const statuses = r.query.getAll('status');
    if (statuses.length > 0) items = items.filter((s) => statuses.includes(s.status));
    items = this.#d.selected(items, r.query);
    const page = paginate(items, r.query);
    return {
      status: 200,
      body: {
        servers: page.items.map((s) => this.#d.serverJson(s)),
        meta: { pagination: page.pagination },
      },
    };
  }

  #create(body: Json): Answer {
    const d = this.#d;
    const name = body.name;
    if (typeof name !== 'string' || !HOSTNAME.test(name)) {
      throw invalidField('name', ['is not a valid hostname']);
    }
    const type = d.serverTypes.find(
      (t) => t.name === body.server_type || t.id === body.server_type,
    );
    if (type === undefined) throw invalidField('server_type', ['server type not found']);
    const candidates = d.images.filter(
      (i) => i.status === 'available' && (i.name === body.image || i.id === body.image),
    );
    const image = candidates.find((i) => i.architecture === type.architecture) ?? candidates[0];
    if (image === undefined) throw invalidField('image', ['image not found']);
    if (image.architecture !== type.architecture) {
      throw new Refusal(
        'invalid_input',
        'image architecture does not match server type architecture',
      );
    }
    let datacenter: string;
    if (body.datacenter !== undefined) {
      const dc = DATACENTERS.find(
        (x) =>
          (x.name === body.datacenter || x.id === body.datacenter) && d.locations.has(x.location),
      );
      if (dc === undefined) {
        throw new Refusal('invalid_input', `datacenter '${String(body.datacenter)}' not found`);
      }
      datacenter = dc.name;
    } else if (body.location !== undefined) {
      const loc = LOCATIONS.find(
        (l) => (l.name === body.location || l.id === body.location) && d.locations.has(l.name),
      );
      if (loc === undefined) {
        throw new Refusal('invalid_input', `location '${String(body.location)}' not found`);
      }
      datacenter = (DATACENTERS.find((x) => x.location === loc.name) as { name: string }).name;
    } else {
      const first = DATACENTERS.find(
        (x) => d.locations.has(x.location) && type.locations.includes(x.location),
      );
      if (first === undefined) throw new Refusal('resource_unavailable', 'error during placement');
      datacenter = first.name;
    }
    const location = datacenter.replace(/-dc\d+$/, '');
    if (!type.locations.includes(location)) {
      throw new Refusal('invalid_input', 'unsupported location for server type');
    }
    d.checkLabels(body.labels);
    const userData = body.user_data;
    if (userData !== undefined && typeof userData !== 'string') {
      throw invalidField('user_data', ['must be a string']);
    }
    if (userData !== undefined && Buffer.byteLength(userData) > MAX_USER_DATA) {
      throw invalidField('user_data', ['is too long']);
    }
    const firewalls = ((body.firewalls ?? []) as { firewall?: unknown }[]).map((f) => {
      const fw = d.firewalls.get(Number(f?.firewall));
      if (fw === undefined) throw invalidField('firewalls', ['firewall not found']);
      return fw;
    });
    if (d.serverNamed(name) !== undefined) throw nameTaken('server');
    if (d.servers.size >= d.serverLimit) throw serverLimit(d.serverLimit);
    const net = (body.public_net ?? {}) as { enable_ipv4?: unknown; enable_ipv6?: unknown };
    const addresses = d.nextAddresses();
    const sshKeys = (body.ssh_keys ?? []) as (string | number)[];
    const server: ServerRec = {
      id: d.nextId(),
      name,
      status: 'initializing',
      created: new Date(),
      labels: { ...((body.labels ?? {}) as Record<string, string>) },
      locked: false,
      ipv4: net.enable_ipv4 === false ? undefined : addresses.ipv4,
      ipv6: net.enable_ipv6 === false ? undefined : addresses.ipv6,
      datacenter,
      serverType: type,
      image,
      userData,
      sshKeys,
      firewalls: firewalls.map((f) => f.id),
    };
    d.servers.set(server.id, server);
    for (const f of firewalls) f.servers.push(server.id);
    const ref = [{ id: server.id, type: 'server' }];
    const create = d.startAction('create_server', ref);
    const start =
      body.start_after_create === false ? undefined : d.startAction('start_server', ref);
    const fails = d.failNextCreateLater;
    d.failNextCreateLater = false;
    d.later(`server/${server.id}`, d.timings.initializingMs, () => {
      if (fails) {
        server.status = 'off';
        d.endAction(create, { code: 'action_failed', message: 'Action failed' });
        if (start !== undefined)
          d.endAction(start, { code: 'action_failed', message: 'Action failed' });
        return;
      }
      d.endAction(create);
      if (start === undefined) {
        server.status = 'off';
        return;
      }
      server.status = 'starting';
      d.later(`server/${server.id}`, d.timings.startingMs, () => {
        server.status = 'running';
        d.endAction(start);
      });
    });
    return {
      status: 201,
      body: {
        server: d.serverJson(server),
        action: actionJson(create),
        next_actions: start === undefined ? [] : [actionJson(start)],
        root_password: sshKeys.length > 0 ? null : d.rootPassword(),
      },
    };
  }

  #update(server: ServerRec, body: Json): Answer {
    const d = this.#d;
    if (body.name !== undefined) {
      if (typeof body.name !== 'string' || !HOSTNAME.test(body.name)) {
        throw invalidField('name', ['is not a valid hostname']);
      }
      const other = d.serverNamed(body.name);
      if (other !== undefined && other.id !== server.id) throw nameTaken('server');
      server.name = body.name;
    }
    if (body.labels !== undefined) {
      d.checkLabels(body.labels);
      server.labels = { ...(body.labels as Record<string, string>) };
    }
    return { status: 200, body: { server: d.serverJson(server) } };
  }

  #delete(server: ServerRec): Answer {
    const d = this.#d;
    if (server.locked) {
      throw new Refusal('locked', 'server is locked');
    }
    const action = d.startAction('delete_server', [{ id: server.id, type: 'server' }]);
    server.status = 'deleting';
    const hold = this.#deleteHolds.get(server.name);
    this.#deleteHolds.delete(server.name);
    const finish = () => {
      this.remove(server.id);
      d.endAction(action);
    };
    if (hold === undefined) d.later(`server/${server.id}`, d.timings.deleteMs, finish);
    else {
      d.cancel(`server/${server.id}`);
      hold.reach();
      void hold.released.then(() => {
        if (d.servers.has(server.id)) d.later(`server/${server.id}`, d.timings.deleteMs, finish);
      });
    }
    return { status: 200, body: { action: actionJson(action) } };
  }

  #power(server: ServerRec, verb: string): Answer {
    const d = this.#d;
    const commands: Record<string, [string, string]> = {
      poweroff: ['stop_server', 'off'],
      shutdown: ['shutdown_server', 'off'],
      poweron: ['start_server', 'running'],
      reset: ['reset_server', 'running'],
      reboot: ['reboot_server', 'running'],
    };
    const c = commands[verb];
    if (c === undefined) throw new Refusal('not_found', 'not found');
    if (server.locked) throw new Refusal('locked', 'server is locked');
    d.cancel(`server/${server.id}`);
    server.status = c[1];
    return {
      status: 201,
      body: { action: actionJson(d.doneAction(c[0], [{ id: server.id, type: 'server' }])) },
    };
  }

  holdNextDelete(name: string): HarnessGate {
    const gate = createGate();
    this.#deleteHolds.set(name, gate);
    return gate;
  }

  releaseHolds(): void {
    for (const g of this.#deleteHolds.values()) g.release();
    this.#deleteHolds.clear();
  }

  plant(
    name: string,
    o: {
      status?: string;
      labels?: Record<string, string>;
      ipv4?: string | null;
      datacenter?: string;
    },
  ): ServerRec {
    const d = this.#d;
    const addresses = d.nextAddresses();
    const type = d.serverTypes[0];
    const image = d.images[0];
    if (type === undefined || image === undefined) throw new Error('double: empty catalogue');
    const server: ServerRec = {
      id: d.nextId(),
      name,
      status: o.status ?? 'running',
      created: new Date(),
      labels: { ...(o.labels ?? {}) },
      locked: false,
      ipv4:
        o.ipv4 === null ? undefined : { id: addresses.ipv4.id, ip: o.ipv4 ?? addresses.ipv4.ip },
      ipv6: addresses.ipv6,
      datacenter: o.datacenter ?? 'fsn1-dc14',
      serverType: type,
      image,
      userData: undefined,
      sshKeys: [],
      firewalls: [],
    };
    d.servers.set(server.id, server);
    return server;
  }

  remove(id: number): void {
    const d = this.#d;
    d.cancel(`server/${id}`);
    d.servers.delete(id);
    for (const f of d.firewalls.values()) f.servers = f.servers.filter((s) => s !== id);
  }
}
