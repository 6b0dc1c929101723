// Peer: the HTTPS fake of the PVE API through the real undici client, made
// to answer badly: `data: null`, a 200 that is not JSON, an HTML 502 from a
// reverse proxy in front of PVE, a body cut short, a body dripped past the
// request timeout. The request itself is carried out each time, as it would
// be behind a proxy that lost the answer. The provider must fail with the
// right class and code, promptly, and work again on the next call.
import { errorClassOf, type Provider } from '@proxy-op/contract';
import { afterEach, describe, expect, it } from 'vitest';
import { createProxmoxFixture, type ProxmoxFixture } from './support/fixture.js';
import { fastTiming, type HostileKind } from './support/pve-model.js';

const fixtures: ProxmoxFixture[] = [];
afterEach(async () => {
  for (const f of fixtures.splice(0)) await f.cleanup?.();
});

/** The per-call budget of these runs, in s: short, so a slow answer runs past it soon. */
const CALL_BUDGET_S = 1.5;

async function setup() {
  const fx = await createProxmoxFixture(
    {},
    { nodes: ['pv1-1'], timing: fastTiming(), config: { requestTimeoutSeconds: CALL_BUDGET_S } },
  );
  fixtures.push(fx);
  return fx;
}

let n = 0;
function request() {
  n++;
  return {
    name: `proxy-hostile-${n}`,
    namespace: 'default',
    uid: `7e57e57e-0000-4000-8000-${String(n).padStart(12, '0')}`,
    port: 3128,
    cloudInit: new TextEncoder().encode('#cloud-config\n'),
    placement: { machineType: 'small', image: 'debian-13' },
  };
}

async function failure(p: Promise<unknown>): Promise<Error & { code?: string; op?: string }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

/** Each operation, on a VM that exists. */
function operations(p: Provider, id: string): [string, () => Promise<unknown>][] {
  return [
    ['get', () => p.get(id)],
    ['listByTag', () => p.listByTag()],
    ['delete', () => p.delete(id)],
  ];
}

describe('hostile answers', () => {
  const rows: [HostileKind, string, string][] = [
    // A reverse proxy's page: the status speaks, the HTML never reaches a message.
    ['html-502', 'PROVIDER_TRANSIENT', 'APIError'],
    // The connection dropped mid-body: a network failure, not an unreadable answer.
    ['truncated', 'PROVIDER_TRANSIENT', 'Unreachable'],
    // One byte a second: the call's budget ends it.
    ['slow-loris', 'PROVIDER_TRANSIENT', 'Timeout'],
  ];
  for (const [kind, code, reason] of rows) {
    it(`${kind}: every operation fails Transient (${code}) within its budget, the Checker says ${reason}, the next call works`, async () => {
      const { provider: p, model: m } = await setup();
      const id = await p.create(request());
      for (const [op, call] of operations(p, id)) {
        m.hostileNext(kind);
        const t0 = Date.now();
        const err = await failure(call());
        // Well under the minutes the drip would take to finish the body.
        expect(Date.now() - t0, op).toBeLessThan(CALL_BUDGET_S * 1000 + 5_000);
        expect(errorClassOf(err), op).toBe('Transient');
        expect(err.code, op).toBe(code);
        expect(err.message, op).not.toMatch(/<html|<h1>/i);
        if (op === 'delete') break; // the first call was carried out: the VM may be gone
        expect((await p.get(id)).id, `${op} then get`).toBe(id);
      }
      m.hostileNext(kind);
      const [r] = await p.check!();
      expect(r?.reason).toBe(reason);
      const [again] = await p.check!();
      expect(again?.reason).toBe('Reachable');
    });
  }

  it('a 502 page in answer to the clone: the clone was carried out, the retry adopts it, no second VM', async () => {
    const { provider: p, model: m } = await setup();
    const req = request();
    m.hostileNext('html-502', 'clone');
    const err = await failure(p.create(req));
    expect(errorClassOf(err)).toBe('Transient');
    expect(err.message).toContain('502 Bad Gateway');
    const id = await p.create(req);
    expect(m.guests().filter((v) => v.name === req.name)).toHaveLength(1);
    expect(m.calls.filter((c) => c === 'clone')).toHaveLength(1);
    expect((await p.get(id)).id).toBe(id);
  });

  it('data null, a body without data, the wrong container, a 200 that is not JSON: malformed, Transient, for every operation', async () => {
    const { provider: p, model: m } = await setup();
    const id = await p.create(request());
    const codes: string[] = [];
    for (let i = 0; i < 4; i++) {
      for (const [op, call] of operations(p, id)) {
        if (op === 'delete') continue;
        m.malformNext();
        const err = await failure(call());
        expect(errorClassOf(err), op).toBe('Transient');
        codes.push(err.code ?? '');
      }
    }
    expect(new Set(codes)).toEqual(new Set(['PROVIDER_MALFORMED_ANSWER']));
    m.malformNext();
    expect(errorClassOf(await failure(p.create(request())))).toBe('Transient');
    expect((await p.get(id)).id).toBe(id);
  });
});
