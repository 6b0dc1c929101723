// Peer: none (in-process). The operation shell around a scripted implementation, built through
// createProvider with the real OpenTelemetry SDK and a recording logger.
import { inspect } from 'node:util';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  BudgetError,
  type CheckAnswer,
  type CheckContext,
  type CreateRequest,
  createProvider,
  idFormat,
  type Profile,
  type ProviderDeps,
  ProviderError,
  type ProviderImplementation,
  type ProviderModule,
  REDACTED,
  type ShellDeps,
} from '../src/index.js';
import { type LogLine, recordingLogger, telemetry } from './telemetry.js';

const tel = telemetry();
beforeEach(() => tel.reset());

const profile: Profile = {
  readiness: 'immediate',
  createReturn: 'blocking',
  deleteReturn: 'waits',
  ipSource: 'assigned-at-create',
  gcMark: 'written-metadata',
  createdAt: 'written-at-create',
  listPartial: 'single-call',
  quota: 'absent',
  notFound: 'error-code',
  primaryKey: 'name-is-key',
  provisioningState: 'create-blocks',
  asyncOps: [],
  secondaryResources: 'none',
  credentials: 'mounted-files',
  clientKind: 'in-process',
  timeouts: 'signal-only',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'local-peer',
};

const SECRET = 'tok-3e1d9a77c0ffee';
const ids = idFormat(['boxes', ':name']);

class BackendFailure extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`backend answered ${status}`);
  }
}

type Script = Partial<ProviderImplementation<{ name: string }>>;

interface Built {
  calls: string[];
  deps?: ShellDeps & ProviderDeps;
}

function moduleFor(script: Script, built: Built) {
  const module: ProviderModule<Record<string, never>, ProviderDeps, { name: string }> = {
    type: 'scripted',
    configSchema: { '~standard': { version: 1, vendor: 'test', validate: () => ({ value: {} }) } },
    profile,
    classify: (_op, err) => {
      if (err instanceof BackendFailure) {
        if (err.status === 404) return 'NotFound';
        if (err.status === 401) return 'Permanent';
        if (err.status === 418) throw new Error('classify itself broke');
      }
      return 'Transient';
    },
    create: (_name, _config, deps) => {
      built.deps = deps;
      deps.secrets.add(SECRET);
      return {
        ids,
        lockKey: (id) => id.name,
        async create(req, ctx) {
          built.calls.push(`create ${req.name}`);
          return script.create ? script.create(req, ctx) : ids.format({ name: req.name });
        },
        async get(id, ctx) {
          built.calls.push(`get ${id.name}`);
          if (script.get) return script.get(id, ctx);
          return { id: ids.format(id), uid: 'u', createdAt: new Date(0) };
        },
        async delete(id, ctx) {
          built.calls.push(`delete ${id.name}`);
          if (script.delete) await script.delete(id, ctx);
        },
        async list(installation, ctx) {
          built.calls.push(`list ${installation}`);
          return script.list ? script.list(installation, ctx) : [];
        },
        ...(script.checker === undefined ? {} : { checker: script.checker }),
      };
    },
  };
  return module;
}

async function build(script: Script = {}) {
  const built: Built = { calls: [] };
  const lines: LogLine[] = [];
  const provider = await createProvider(
    moduleFor(script, built),
    'scripted-a',
    {},
    {
      logger: recordingLogger(lines),
      tracer: tel.tracer,
      meter: tel.meter,
    },
  );
  return { provider, built, lines };
}

const request = (name = 'proxy-a'): CreateRequest => ({
  name,
  namespace: 'default',
  uid: 'uid-1',
  port: 3128,
  cloudInit: new TextEncoder().encode('#cloud-config\n'),
  placement: {},
});

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const caught = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('operation shell: arguments and the signal', () => {
  it('refuses misuse with a TypeError and bad values as Permanent, before any backend call', async () => {
    const { provider, built } = await build();
    await expect(provider.get(42 as never)).rejects.toBeInstanceOf(TypeError);
    await expect(provider.get('boxes/a', { signal: 'soon' as never })).rejects.toBeInstanceOf(
      TypeError,
    );
    await expect(provider.delete('boxes/a', { uid: 7 as never })).rejects.toBeInstanceOf(TypeError);
    await expect(provider.create(null as never)).rejects.toBeInstanceOf(TypeError);
    const bad = await caught(provider.create({ ...request(), name: 'Not_A_Label' }));
    expect(bad).toMatchObject({ errorClass: 'Permanent', provider: 'scripted-a', op: 'create' });
    for (const id of ['', 'boxes', 'boxes/a/b', 'crates/a', 'boxes/']) {
      const err = await caught(provider.delete(id));
      expect(err, id).toMatchObject({ errorClass: 'Permanent', op: 'delete' });
      expect((err as Error).message).toContain('boxes/<name>');
    }
    const list = await caught(provider.listByTag({ installation: 'Bad Install' }));
    expect(list).toMatchObject({ errorClass: 'Permanent', op: 'list' });
    expect(built.calls).toEqual([]);
  });

  it('answers an already-fired signal with the cancellation error and calls nothing', async () => {
    const { provider, built } = await build();
    const signal = AbortSignal.abort();
    for (const call of [
      () => provider.create(request(), { signal }),
      () => provider.get('boxes/a', { signal }),
      () => provider.delete('boxes/a', { signal }),
      () => provider.listByTag({ signal }),
    ]) {
      const err = await caught(call());
      expect(err).toMatchObject({ errorClass: 'Transient', provider: 'scripted-a' });
      expect((err as Error).message).toMatch(/was cancelled/);
    }
    expect(built.calls).toEqual([]);
  });
});

describe('operation shell: one operation per instance name', () => {
  it('serialises Create and Delete of one name, and lets other names run', async () => {
    const gate = deferred();
    const order: string[] = [];
    const { provider } = await build({
      async create(req) {
        order.push(`start ${req.name}`);
        if (req.name === 'proxy-a') await gate.promise;
        order.push(`end ${req.name}`);
        return ids.format({ name: req.name });
      },
      async delete(id) {
        order.push(`delete ${id.name}`);
      },
    });
    const first = provider.create(request('proxy-a'));
    const second = provider.delete('boxes/proxy-a');
    const other = provider.create(request('proxy-b'));
    await other;
    expect(order).toEqual(['start proxy-a', 'start proxy-b', 'end proxy-b']);
    gate.resolve();
    await Promise.all([first, second]);
    expect(order.slice(3)).toEqual(['end proxy-a', 'delete proxy-a']);
  });

  it('gives up a wait for the lock when the signal fires', async () => {
    const gate = deferred();
    const { provider, built } = await build({
      async create(req) {
        await gate.promise;
        return ids.format({ name: req.name });
      },
    });
    const first = provider.create(request());
    const ac = new AbortController();
    const waiting = caught(provider.delete('boxes/proxy-a', { signal: ac.signal }));
    ac.abort();
    expect(await waiting).toMatchObject({ errorClass: 'Transient', op: 'delete' });
    gate.resolve();
    await first;
    expect(built.calls).toEqual(['create proxy-a']);
  });
});

describe('operation shell: the error funnel', () => {
  it('makes an unreadable answer a Transient malformed-answer error, logged and counted', async () => {
    const { provider, lines } = await build({
      async get() {
        const items = JSON.parse('null') as { name: string }[];
        return { id: items.map((i) => i.name).join(), uid: '', createdAt: new Date(0) };
      },
      async list() {
        return JSON.parse('<html>502 Bad Gateway</html>') as never;
      },
    });
    for (const [op, call] of [
      ['get', () => provider.get('boxes/proxy-a')],
      ['list', () => provider.listByTag()],
    ] as const) {
      const err = await caught(call());
      expect(ProviderError.isInstance(err), op).toBe(true);
      expect(err).toMatchObject({
        errorClass: 'Transient',
        code: 'PROVIDER_MALFORMED_ANSWER',
        provider: 'scripted-a',
        op,
      });
      expect((err as Error).cause).toBeInstanceOf(op === 'get' ? TypeError : SyntaxError);
      const outcome = lines.find((l) => l.msg === `provider ${op} failed`);
      expect(outcome?.fields).toMatchObject({
        errorClass: 'Transient',
        code: 'PROVIDER_MALFORMED_ANSWER',
      });
    }
    const counted = (await tel.metrics()).find((m) => m.descriptor.name.endsWith('operations'));
    const outcomes = counted?.dataPoints.map((d) => d.attributes['proxy_op.outcome']);
    expect(outcomes).toContain('Transient');
  });

  it('classifies a network failure that fetch or undici report as a TypeError', async () => {
    const { provider } = await build({
      async get() {
        const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
        throw new TypeError('terminated', { cause: reset });
      },
    });
    const err = await caught(provider.get('boxes/a'));
    expect(err).toMatchObject({ errorClass: 'Transient', code: 'PROVIDER_TRANSIENT', op: 'get' });
  });

  it('classifies with the module, makes NotFound Transient inside Create, survives a broken classify', async () => {
    let status = 404;
    const { provider } = await build({
      async create() {
        throw new BackendFailure(status, 'gone');
      },
      async get() {
        throw new BackendFailure(status, 'gone');
      },
    });
    expect(await caught(provider.get('boxes/a'))).toMatchObject({ errorClass: 'NotFound' });
    expect(await caught(provider.create(request()))).toMatchObject({
      errorClass: 'Transient',
      op: 'create',
    });
    status = 401;
    expect(await caught(provider.get('boxes/a'))).toMatchObject({ errorClass: 'Permanent' });
    status = 418;
    expect(await caught(provider.get('boxes/a'))).toMatchObject({ errorClass: 'Transient' });
  });

  it('re-issues a ProviderError that names another provider or operation', async () => {
    const { provider } = await build({
      async get() {
        throw new ProviderError('Permanent', { provider: 'scripted', op: 'clone', message: 'no' });
      },
      async delete(_id, ctx) {
        throw ctx.notFound('gone already');
      },
    });
    const err = await caught(provider.get('boxes/a'));
    expect(err).toMatchObject({
      errorClass: 'Permanent',
      provider: 'scripted-a',
      op: 'get',
      message: 'no',
    });
    expect(await caught(provider.delete('boxes/a'))).toMatchObject({
      errorClass: 'NotFound',
      provider: 'scripted-a',
      op: 'delete',
    });
  });

  it('answers a failure after the signal fired with the cancellation error, but keeps a decided answer', async () => {
    let current = new AbortController();
    let decided = false;
    const { provider } = await build({
      async get(_id, ctx) {
        current.abort();
        if (decided) throw ctx.permanent('refused for good');
        throw new BackendFailure(500, 'socket closed');
      },
    });
    const err = await caught(provider.get('boxes/a', { signal: current.signal }));
    expect(err).toMatchObject({ errorClass: 'Transient' });
    expect((err as Error).message).toMatch(/cancelled/);
    decided = true;
    current = new AbortController();
    const again = await caught(provider.get('boxes/a', { signal: current.signal }));
    expect(again).toMatchObject({ errorClass: 'Permanent', message: 'refused for good' });
  });
});

describe('operation shell: secrets', () => {
  const forms = {
    plain: SECRET,
    basicAuth: `Basic ${Buffer.from(`root@pam:${SECRET}`).toString('base64')}`,
    hex: Buffer.from(SECRET).toString('hex'),
    url: `token=${encodeURIComponent(`${SECRET}&x=1`)}`,
    base64url: Buffer.from(`xy${SECRET}`).toString('base64url'),
  };

  for (const [form, text] of Object.entries(forms)) {
    it(`redacts a ${form} echo from the message and the whole cause chain`, async () => {
      const { provider, lines } = await build({
        async get() {
          const inner = new BackendFailure(500, `request was: ${text}`);
          throw new Error(`upstream said ${text}`, { cause: inner });
        },
      });
      const err = await caught(provider.get('boxes/a'));
      const everything = `${String(err)}\n${JSON.stringify(err)}\n${inspect(err, { depth: 8 })}`;
      expect(everything).not.toContain(SECRET);
      expect(everything).not.toContain(text);
      expect(everything).toContain(REDACTED);
      const cause = (err as Error).cause as Error;
      expect((cause.cause as BackendFailure).status).toBe(500);
      expect(cause.cause).toBeInstanceOf(BackendFailure);
      expect(JSON.stringify(lines)).not.toContain(text);
    });
  }

  it('redacts the logger the provider writes to, and Checker messages and details', async () => {
    const built: Built = { calls: [] };
    const lines: LogLine[] = [];
    const mod = moduleFor(
      {
        checker: {
          targets: () => [{ target: 'node-1', address: 'https://pve:8006' }],
          async check(_t, ctx) {
            ctx.details.tokenId = `root@pam!op=${SECRET}`;
            return { reason: 'Unauthorized', message: `401 for token ${SECRET}` };
          },
        },
      },
      built,
    );
    const provider = await createProvider(
      mod,
      'scripted-a',
      {},
      { logger: recordingLogger(lines) },
    );
    const deps = built.deps;
    deps?.logger.debug({ header: `PVEAPIToken=${SECRET}` }, `sent ${SECRET}`);
    const [r] = (await provider.check?.()) ?? [];
    expect(JSON.stringify(r)).not.toContain(SECRET);
    expect(r?.reason).toBe('Unauthorized');
    expect(JSON.stringify(lines)).not.toContain(SECRET);
    expect(lines[0]?.fields.header).toBe(`PVEAPIToken=${REDACTED}`);
  });
});

describe('operation shell: the Checker policy', () => {
  it('checks targets concurrently, answers in config order, and Timeout with the details so far', async () => {
    const slow = deferred();
    const started: string[] = [];
    const { provider, built } = await build({
      checker: {
        targets: () =>
          ['a', 'b', 'c'].map((t) => ({
            target: t,
            address: `${t}.example`,
            details: { zone: t },
          })),
        async check(t, ctx: CheckContext): Promise<CheckAnswer> {
          started.push(t.target);
          ctx.details.step = 'version';
          if (t.target === 'a') await slow.promise;
          if (t.target === 'c') throw new Error('boom');
          return { reason: 'Reachable', message: 'fine' };
        },
      },
    });
    const ac = new AbortController();
    const round = provider.check?.({ signal: ac.signal });
    await new Promise((r) => setTimeout(r, 20));
    expect(started).toEqual(['a', 'b', 'c']);
    ac.abort();
    const results = (await round) ?? [];
    expect(results.map((r) => [r.target, r.reason, r.ready])).toEqual([
      ['a', 'Timeout', false],
      ['b', 'Reachable', true],
      ['c', 'APIError', false],
    ]);
    expect(results[0]?.details).toEqual({ zone: 'a', step: 'version' });
    expect(Object.keys(results[1] ?? {}).sort()).toEqual([
      'address',
      'details',
      'message',
      'ready',
      'reason',
      'target',
    ]);
    expect(results[2]?.message).toBe('boom');
    slow.resolve();
    const pre = (await provider.check?.({ signal: AbortSignal.abort() })) ?? [];
    expect(pre.map((r) => r.reason)).toEqual(['Timeout', 'Timeout', 'Timeout']);
    expect(pre.map((r) => r.details)).toEqual([{ zone: 'a' }, { zone: 'b' }, { zone: 'c' }]);
    expect(built.calls).toEqual([]);
  });
});

describe('operation shell: budgets and failures the Checker does not decide', () => {
  it('makes a call past its budget Transient without asking classify, and keeps it as cause', async () => {
    const { provider } = await build({
      get: () => Promise.reject(new BudgetError('vmStatus', 50)),
    });
    const err = await caught(provider.get('boxes/a'));
    expect(ProviderError.isInstance(err)).toBe(true);
    expect(err).toMatchObject({ errorClass: 'Transient', code: 'PROVIDER_TRANSIENT', op: 'get' });
    expect((err as Error).message).toBe('vmStatus did not answer within 50 ms');
    expect(BudgetError.isInstance((err as Error).cause)).toBe(true);
  });

  it('answers Timeout for a budget, the failed hook for the rest, APIError when it has none', async () => {
    const hooked: unknown[] = [];
    const { provider } = await build({
      checker: {
        targets: () =>
          ['budget', 'dial', 'denied', 'other', 'broken'].map((t) => ({ target: t, address: t })),
        async check(t, ctx): Promise<CheckAnswer> {
          ctx.details.step = 'login';
          if (t.target === 'budget') throw new BudgetError('login', 10);
          if (t.target === 'dial') {
            throw new Error('the handshake failed', { cause: new BudgetError('hello', 20) });
          }
          if (t.target === 'denied') throw new BackendFailure(401, 'no');
          if (t.target === 'broken') throw new BackendFailure(418, 'teapot');
          throw new Error('something else');
        },
        failed(err, ctx) {
          hooked.push(err);
          if (err instanceof BackendFailure && err.status === 418) throw new Error('hook broke');
          if (!(err instanceof BackendFailure)) return undefined;
          ctx.details.status = err.status;
          return { reason: 'Unauthorized', message: `status ${err.status}` };
        },
      },
    });
    const results = (await provider.check?.()) ?? [];
    expect(results.map((r) => [r.target, r.reason, r.ready, r.message])).toEqual([
      ['budget', 'Timeout', false, 'login did not answer within 10 ms'],
      ['dial', 'Timeout', false, 'the handshake failed'],
      ['denied', 'Unauthorized', false, 'status 401'],
      ['other', 'APIError', false, 'something else'],
      ['broken', 'APIError', false, 'backend answered 418'],
    ]);
    expect(results[2]?.details).toEqual({ step: 'login', status: 401 });
    // Never asked about a budget, nor about what one caused.
    expect(hooked).toHaveLength(3);
  });

  it('answers Timeout for an answer that arrives after the round ended, whatever it says', async () => {
    const { provider } = await build({
      checker: {
        targets: () => [{ target: 'a', address: 'a' }],
        check: (_t, ctx) =>
          new Promise<CheckAnswer>((resolve) => {
            // A check that turns its own cancellation into an answer of its own.
            ctx.signal.addEventListener('abort', () =>
              resolve({ reason: 'Unreachable', message: 'connection reset' }),
            );
          }),
        failed: () => ({ reason: 'Unreachable', message: 'never asked' }),
      },
    });
    const results = (await provider.check?.({ signal: AbortSignal.timeout(20) })) ?? [];
    expect(results.map((r) => r.reason)).toEqual(['Timeout']);
  });
});
