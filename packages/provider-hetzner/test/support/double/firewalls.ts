// Test support (not a test file): the `/firewalls` routes of the Hetzner Cloud API double: list
// (name, label selector, paged), get, create (rules checked, applied to servers on request),
// update (name, labels), delete (refused while applied) and the `set_rules`,
// `apply_to_resources` and `remove_from_resources` actions.
import { isIP } from 'node:net';
import { invalidField, nameTaken, notFound, Refusal } from './answers.js';
import type { Json } from './catalogue.js';
import type { Answer, HetznerDouble, Req } from './double.js';
import { actionJson, type FirewallRec, firewallJson, paginate, type RuleRec } from './store.js';

const PROTOCOLS = new Set(['tcp', 'udp', 'icmp', 'esp', 'gre']);
const PORT = /^(?:any|\d{1,5}(?:-\d{1,5})?)$/;

function cidrOk(s: unknown): boolean {
  if (typeof s !== 'string') return false;
  const [addr = '', prefix, ...rest] = s.split('/');
  const family = isIP(addr);
  if (rest.length > 0 || family === 0 || prefix === undefined || !/^\d{1,3}$/.test(prefix)) {
    return false;
  }
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

/** The rules of a request, as the API keeps them; a bad rule is `invalid_input` on `rules`. */
function rulesOf(v: unknown): RuleRec[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw invalidField('rules', ['must be a list']);
  return v.map((r: Json) => {
    const direction = r?.direction;
    const protocol = r?.protocol;
    const port = r?.port;
    const sources = (r?.source_ips ?? []) as unknown[];
    const destinations = (r?.destination_ips ?? []) as unknown[];
    const bad =
      (direction !== 'in' && direction !== 'out') ||
      typeof protocol !== 'string' ||
      !PROTOCOLS.has(protocol) ||
      ((protocol === 'tcp' || protocol === 'udp') &&
        (typeof port !== 'string' || !PORT.test(port))) ||
      !Array.isArray(sources) ||
      !Array.isArray(destinations) ||
      (direction === 'in' && sources.length === 0) ||
      (direction === 'out' && destinations.length === 0) ||
      !sources.every(cidrOk) ||
      !destinations.every(cidrOk);
    if (bad) throw invalidField('rules', ['invalid rule']);
    return {
      direction: direction as string,
      source_ips: sources as string[],
      destination_ips: destinations as string[],
      protocol: protocol as string,
      port: typeof port === 'string' ? port : null,
      description: typeof r.description === 'string' ? r.description : null,
    };
  });
}

export class FirewallRoutes {
  readonly #d: HetznerDouble;

  constructor(d: HetznerDouble) {
    this.#d = d;
  }

  route(r: Req): Answer {
    const [, id, sub, verb] = r.parts;
    const d = this.#d;
    if (id === undefined) {
      if (r.method === 'GET') return this.#list(r);
      if (r.method === 'POST') return this.#create(r.body ?? {});
      throw new Refusal('method_not_allowed', 'method not allowed');
    }
    const fw = d.firewalls.get(Number(id));
    if (fw === undefined || !/^\d+$/.test(id)) throw notFound('firewall', id);
    if (sub === undefined) {
      if (r.method === 'GET') return { status: 200, body: { firewall: firewallJson(fw) } };
      if (r.method === 'PUT') return this.#update(fw, r.body ?? {});
      if (r.method === 'DELETE') {
        if (fw.servers.length > 0) {
          throw new Refusal('resource_in_use', `firewall with ID '${fw.id}' is still in use`);
        }
        d.firewalls.delete(fw.id);
        return { status: 204 };
      }
      throw new Refusal('method_not_allowed', 'method not allowed');
    }
    if (sub === 'actions' && r.method === 'POST') {
      const ref = [{ id: fw.id, type: 'firewall' }];
      switch (verb) {
        case 'set_rules':
          fw.rules = rulesOf(r.body?.rules);
          return {
            status: 201,
            body: { actions: [actionJson(d.doneAction('set_firewall_rules', ref))] },
          };
        case 'apply_to_resources':
          return this.#apply(fw, r.body?.apply_to, true);
        case 'remove_from_resources':
          return this.#apply(fw, r.body?.remove_from, false);
        default:
          break;
      }
    }
    throw new Refusal('not_found', 'not found');
  }

  #list(r: Req): Answer {
    let items = [...this.#d.firewalls.values()].sort((a, b) => a.id - b.id);
    const name = r.query.get('name');
    if (name !== null) items = items.filter((f) => f.name === name);
    items = this.#d.selected(items, r.query);
    const page = paginate(items, r.query);
    return {
      status: 200,
      body: { firewalls: page.items.map(firewallJson), meta: { pagination: page.pagination } },
    };
  }

  #create(body: Json): Answer {
    const d = this.#d;
    if (typeof body.name !== 'string' || body.name === '') {
      throw invalidField('name', ['is required']);
    }
    d.checkLabels(body.labels);
    const rules = rulesOf(body.rules);
    if ([...d.firewalls.values()].some((f) => f.name === body.name)) throw nameTaken('firewall');
    const fw: FirewallRec = {
      id: d.nextId(),
      name: body.name,
      labels: { ...((body.labels ?? {}) as Record<string, string>) },
      created: new Date(),
      rules,
      servers: [],
    };
    d.firewalls.set(fw.id, fw);
    const actions = body.apply_to === undefined ? [] : [this.#apply(fw, body.apply_to, true)];
    return {
      status: 201,
      body: {
        firewall: firewallJson(fw),
        actions: actions.flatMap((a) => (a.body as { actions: unknown[] }).actions),
      },
    };
  }

  #update(fw: FirewallRec, body: Json): Answer {
    const d = this.#d;
    if (body.name !== undefined) {
      if (typeof body.name !== 'string' || body.name === '') {
        throw invalidField('name', ['is required']);
      }
      if ([...d.firewalls.values()].some((f) => f.name === body.name && f.id !== fw.id)) {
        throw nameTaken('firewall');
      }
      fw.name = body.name;
    }
    if (body.labels !== undefined) {
      d.checkLabels(body.labels);
      fw.labels = { ...(body.labels as Record<string, string>) };
    }
    return { status: 200, body: { firewall: firewallJson(fw) } };
  }

  /** Applies the firewall to (or removes it from) the servers named by ID. */
  #apply(fw: FirewallRec, resources: unknown, apply: boolean): Answer {
    const d = this.#d;
    if (!Array.isArray(resources)) throw invalidField(apply ? 'apply_to' : 'remove_from', []);
    const actions = resources.map((res: Json) => {
      const id = Number((res?.server as Json | undefined)?.id);
      const server = d.servers.get(id);
      if (res?.type !== 'server' || server === undefined) {
        throw new Refusal('firewall_resource_not_found', 'resource not found');
      }
      if (apply) {
        if (!fw.servers.includes(id)) fw.servers.push(id);
        if (!server.firewalls.includes(fw.id)) server.firewalls.push(fw.id);
      } else {
        fw.servers = fw.servers.filter((s) => s !== id);
        server.firewalls = server.firewalls.filter((f) => f !== fw.id);
      }
      const command = apply ? 'apply_firewall' : 'remove_firewall';
      return actionJson(
        d.doneAction(command, [
          { id: fw.id, type: 'firewall' },
          { id, type: 'server' },
        ]),
      );
    });
    return { status: 201, body: { actions } };
  }
}
