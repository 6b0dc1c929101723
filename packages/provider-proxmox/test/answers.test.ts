// Peer: the kept PVE answers (test/fixtures/pve), replayed byte for byte by a
// bare HTTPS server to the real undici client, and the HTTPS fake asked the
// same requests. One place holds the wording: the classify table, the
// provider's matchers and the double are all checked against it here.
import { createServer, request as httpsRequest, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createLogSink } from '@proxy-op/providertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readAnswer } from '../src/answers.js';
import {
  AGENT_NOT_CONFIGURED,
  AGENT_NOT_RUNNING,
  classify,
  isConfigExists,
  isDestroyRunning,
  isDoesNotExist,
  isNoSuchStorage,
} from '../src/classify.js';
import { HttpProxmoxApi } from '../src/client.js';
import { ApiError } from '../src/errors.js';
import { NO_AGENT_REASON } from '../src/state.js';
import { captured, capturedNames, messageOf, render } from './support/answers.js';
import {
  ANSWER_CLASSES,
  createProxmoxFixture,
  errorOfAnswer,
  type ProxmoxFixture,
  TOKEN_LINE,
  vmOf,
} from './support/fixture.js';
import { makePki } from './support/https-fake.js';
import { fastTiming } from './support/pve-model.js';

const pki = makePki();
let replay: Server;
let replayUrl = '';
let current = 'ok-version';

beforeAll(async () => {
  // Sends the kept answer `current` as it was kept, whatever is asked.
  replay = createServer({ key: pki.key, cert: pki.cert }, (req, res) => {
    req.resume();
    const a = captured(current);
    res.statusCode = a.status;
    res.statusMessage = a.reason;
    for (const [k, v] of Object.entries(a.headers)) res.setHeader(k, v);
    if (a.body !== '') res.setHeader('content-length', String(Buffer.byteLength(a.body)));
    res.end(a.body);
  });
  await new Promise<void>((r) => replay.listen(0, '127.0.0.1', r));
  replayUrl = `https://127.0.0.1:${(replay.address() as AddressInfo).port}`;
});
afterAll(async () => {
  replay.closeAllConnections();
  await new Promise<void>((r) => replay.close(() => r()));
});

const fixtures: ProxmoxFixture[] = [];
afterEach(async () => {
  for (const f of fixtures.splice(0)) await f.cleanup?.();
});

function replayClient(tokenFile: string): HttpProxmoxApi {
  return new HttpProxmoxApi({
    url: replayUrl,
    tokenFile,
    caFile: pki.caFile,
    requestTimeoutMs: 5_000,
  });
}

describe('kept answers', () => {
  it('every kept error answer has a class in the table, and every row a kept answer', () => {
    const errors = capturedNames().filter((n) => n.startsWith('error-'));
    expect(Object.keys(ANSWER_CLASSES).sort()).toEqual(errors);
    for (const name of capturedNames()) {
      const a = captured(name);
      expect(a.source.length, name).toBeGreaterThan(20);
      expect(a.request, name).toMatch(/^(GET|POST|PUT|DELETE) \/api2\/json\//);
    }
  });

  it('each kept error answer, through the real client, is classified as its row says', async () => {
    const fx = await createProxmoxFixture({}, { peer: 'seam', timing: fastTiming() });
    fixtures.push(fx);
    const c = replayClient(fx.tokenFile);
    try {
      for (const [name, { op, want }] of Object.entries(ANSWER_CLASSES)) {
        current = name;
        const err = await c.version().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err, name).toBeInstanceOf(ApiError);
        const a = captured(name);
        expect((err as ApiError).status, name).toBe(a.status);
        // The same error the fixtures' parser makes, so the classify rows are what the wire gives.
        expect((err as ApiError).message, name).toBe(errorOfAnswer(name).message);
        expect(classify(op, err), name).toBe(want);
        // No page of HTML or Perl trace makes it into a message.
        expect((err as ApiError).message, name).not.toMatch(/<html|\n/);
      }
    } finally {
      await c.close();
    }
  });

  it('each kept successful answer reads through the real client', async () => {
    const fx = await createProxmoxFixture({}, { peer: 'seam', timing: fastTiming() });
    fixtures.push(fx);
    const c = replayClient(fx.tokenFile);
    try {
      current = 'ok-version';
      expect(await c.version()).toMatchObject({ version: '9.2.20' });
      current = 'ok-node-status';
      expect((await c.nodeStatus({ node: 'pv1-1' })).kversion).toContain('-pve');
      current = 'ok-resources-mid-clone';
      const list = await c.clusterResources();
      // F8: the VM being cloned is listed without a name, locked, status unknown.
      expect(list.find((e) => e.vmid === 100123)).toEqual({
        id: 'qemu/100123',
        lock: 'clone',
        node: 'pv1-1',
        status: 'unknown',
        type: 'qemu',
        vmid: 100123,
      });
      current = 'ok-config-mid-clone';
      expect(await c.vmConfig({ node: 'pv1-1', vmid: 100123 })).toMatchObject({ lock: 'clone' });
      current = 'ok-task-running';
      expect(await c.taskStatus({ node: 'pv1-1', upid: 'UPID:x' })).toMatchObject({
        status: 'running',
      });
      current = 'ok-task-ok';
      expect(await c.taskStatus({ node: 'pv1-1', upid: 'UPID:x' })).toMatchObject({
        status: 'stopped',
        exitstatus: 'OK',
      });
      current = 'ok-task-failed-shrink';
      expect((await c.taskStatus({ node: 'pv1-1', upid: 'UPID:x' })).exitstatus).toBe(
        'shrinking disks is not supported',
      );
    } finally {
      await c.close();
    }
  });

  it("the provider's matchers hold to the kept texts", () => {
    expect(isDoesNotExist(errorOfAnswer('error-500-does-not-exist'))).toBe(true);
    expect(isConfigExists(errorOfAnswer('error-500-config-exists'))).toBe(true);
    expect(isDestroyRunning(errorOfAnswer('error-500-destroy-running'))).toBe(true);
    expect(isNoSuchStorage(errorOfAnswer('error-400-no-such-storage'))).toBe(true);
    expect(messageOf(captured('error-500-agent-not-running'))).toBe(AGENT_NOT_RUNNING);
    expect(messageOf(captured('error-500-agent-not-configured'))).toBe(AGENT_NOT_CONFIGURED);
    // The stopped VM's answer is a suffix of no matcher's text, and matches none of them.
    const notRunning = errorOfAnswer('error-500-vm-not-running') as ApiError;
    expect(notRunning.apiMessage).toMatch(/^VM [0-9]+ is not running$/);
    expect([AGENT_NOT_RUNNING, AGENT_NOT_CONFIGURED]).not.toContain(notRunning.apiMessage);
    expect(isDoesNotExist(notRunning)).toBe(false);
    // Other values of the variables keep the shape the matchers read.
    const other = render('error-500-does-not-exist', { node: 'pv9-9', vmid: 777777 });
    expect(messageOf(other)).toBe(
      "Configuration file 'nodes/pv9-9/qemu-server/777777.conf' does not exist",
    );
  });
});

/** One raw request to the HTTPS fake: status, reason, headers and body as sent. */
function raw(
  fx: ProxmoxFixture,
  method: string,
  path: string,
  opts: { token?: string | null; body?: string; headers?: Record<string, string> } = {},
): Promise<{
  status: number;
  reason: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}> {
  const url = new URL(path, fx.fake!.url);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method,
        ca: fx.fake!.pki.cert,
        rejectUnauthorized: false,
        agent: false,
        headers: {
          connection: 'keep-alive',
          ...(opts.token === null
            ? {}
            : { authorization: `PVEAPIToken=${opts.token ?? TOKEN_LINE}` }),
          ...opts.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            reason: res.statusMessage ?? '',
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

describe('the double answers as kept', () => {
  async function https() {
    const fx = await createProxmoxFixture({}, { nodes: ['pv1-1', 'pv1-2'], timing: fastTiming() });
    fixtures.push(fx);
    return fx;
  }

  /** The answer matches the kept one for these values: status, reason, body, content type, connection. */
  function expectKept(
    got: Awaited<ReturnType<typeof raw>>,
    name: string,
    vars: Record<string, string | number> = {},
  ): void {
    const a = render(name, vars);
    expect([got.status, got.reason, got.body], name).toEqual([a.status, a.reason, a.body]);
    expect(got.headers['content-type'], name).toBe(a.headers['content-type']);
    expect(got.headers.connection, name).toBe(a.headers.connection);
    expect(got.headers.server, name).toBe('pve-api-daemon/3.0');
  }

  it('the errors of the API, each from the state that gives it', async () => {
    const fx = await https();
    const m = fx.model;
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    expectKept(await raw(fx, 'GET', '/api2/json/version', { token: null }), 'error-401-no-ticket');
    expectKept(
      await raw(fx, 'GET', '/api2/json/cluster/resources?type=vm', { token: 'a@pve!b=c' }),
      'error-401-token',
    );
    expectKept(
      await raw(fx, 'GET', '/api2/json/nodes/pv1-1/qemu/100123/config'),
      'error-500-does-not-exist',
      { node: 'pv1-1', vmid: 100123 },
    );
    expectKept(
      await raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/9001/clone', {
        body: 'newid=99&full=1',
        headers: form,
      }),
      'error-400-param',
    );
    m.cloneNow(9001, 100123, 'proxy-a', 'd');
    expectKept(
      await raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/9001/clone', {
        body: 'newid=100123&full=1',
        headers: form,
      }),
      'error-500-config-exists',
      { vmid: 100123 },
    );
    expectKept(
      await raw(fx, 'PUT', '/api2/json/nodes/pv1-1/qemu/100123/config', {
        body: 'tags=bad%20tag!',
        headers: form,
      }),
      'error-400-tag',
      { node: 'pv1-1', vmid: 100123 },
    );
    expectKept(
      await raw(fx, 'GET', '/api2/json/nodes/pv1-1/qemu/100123/agent/network-get-interfaces'),
      'error-500-vm-not-running',
      { node: 'pv1-1', vmid: 100123 },
    );
    const vm = m.vms.get(100123)!;
    vm.status = 'running';
    vm.qmpstatus = 'running';
    expectKept(
      await raw(fx, 'GET', '/api2/json/nodes/pv1-1/qemu/100123/agent/network-get-interfaces'),
      'error-500-agent-not-running',
      { node: 'pv1-1', vmid: 100123 },
    );
    expectKept(
      await raw(
        fx,
        'DELETE',
        '/api2/json/nodes/pv1-1/qemu/100123?purge=1&destroy-unreferenced-disks=1',
      ),
      'error-500-destroy-running',
      { node: 'pv1-1', vmid: 100123 },
    );
    delete vm.config.agent;
    expectKept(
      await raw(fx, 'GET', '/api2/json/nodes/pv1-1/qemu/100123/agent/network-get-interfaces'),
      'error-500-agent-not-configured',
      { node: 'pv1-1', vmid: 100123 },
    );
    vm.lock = 'clone';
    expectKept(
      await raw(fx, 'PUT', '/api2/json/nodes/pv1-1/qemu/100123/config', {
        body: 'cores=2',
        headers: form,
      }),
      'error-500-locked',
      { node: 'pv1-1', vmid: 100123 },
    );
    expectKept(
      await raw(fx, 'GET', '/api2/json/nodes/pv1-1/storage/nope/status'),
      'error-400-no-such-storage',
      {
        node: 'pv1-1',
        storage: 'nope',
      },
    );
    expectKept(await raw(fx, 'GET', '/api2/json/nodes/pv1-9/status'), 'error-500-no-such-node', {
      node: 'pv1-9',
    });
    m.unreachableNodes.add('pv1-2');
    expectKept(await raw(fx, 'GET', '/api2/json/nodes/pv1-2/status'), 'error-595', {
      node: 'pv1-2',
    });
    m.unreachableNodes.clear();
    m.brokenNodes.add('pv1-2');
    expectKept(await raw(fx, 'GET', '/api2/json/nodes/pv1-2/status'), 'error-596', {
      node: 'pv1-2',
    });
    m.forbidden.set('deleteVolume', '/storage/proxy-seeds, Datastore.Allocate');
    expectKept(
      await raw(
        fx,
        'DELETE',
        '/api2/json/nodes/pv1-1/storage/proxy-seeds/content/proxy-seeds%3Aiso%2Fx.iso',
      ),
      'error-403',
    );
    expectKept(
      await raw(fx, 'GET', '/api2/json/nodes/pv1-1/qemu/100123/nonsense'),
      'error-501-not-implemented',
      { node: 'pv1-1', vmid: 100123 },
    );
  });

  it("the guest agent's answers follow qemu-server's assert_agent_available, from the running config", async () => {
    // qemu-server PVE/QemuServer/Agent.pm checks, in this order: no `agent` key in the VM's
    // config (whatever the VM does) → not configured; the key there, whatever its value
    // (`0` too), and the VM not running → VM <vmid> is not running; the agent not answering
    // its ping (no channel, as QEMU was started with the agent off; not booted yet; not running
    // in the guest) → not running. The config it reads is the running one: a change written
    // while the VM runs waits as pending and counts from the next start. status/current's
    // `agent` flag is that config's too.
    const fx = await https();
    const m = fx.model;
    const vars = { node: 'pv1-1', vmid: 100123 };
    const base = '/api2/json/nodes/pv1-1/qemu/100123';
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const vm = m.cloneNow(9001, 100123, 'proxy-a', 'd');
    const put = async (body: string) => {
      const r = await raw(fx, 'PUT', `${base}/config`, { body, headers: form });
      expect([r.status, body]).toEqual([200, body]);
    };
    const power = async (what: 'start' | 'stop') => {
      expect((await raw(fx, 'POST', `${base}/status/${what}`)).status).toBe(200);
      await m.settle();
    };
    const restart = async () => {
      await power('stop');
      await power('start');
    };
    const flag = async () =>
      (JSON.parse((await raw(fx, 'GET', `${base}/status/current`)).body) as { data: object }).data;
    const rows: [string, () => Promise<void> | void, string, boolean][] = [
      ['agent 1, stopped', () => {}, 'error-500-vm-not-running', true],
      ['agent 1, running, booted', () => power('start'), 'answers', true],
      [
        'agent 1, running, not booted yet',
        () => m.setTiming({ agentBootMs: 60_000 }),
        'error-500-agent-not-running',
        true,
      ],
      [
        'agent 1, running, the guest agent not running',
        () => {
          m.setTiming({ agentBootMs: 0 });
          vm.guestAgent = 'down';
        },
        'error-500-agent-not-running',
        true,
      ],
      [
        'agent 0 written while it runs (pending; the channel is still there)',
        async () => {
          vm.guestAgent = 'up';
          await put('agent=0');
        },
        'answers',
        true,
      ],
      // A stop leaves a pending change pending: the start applies it.
      ['agent 0 pending, stopped', () => power('stop'), 'error-500-vm-not-running', true],
      ['agent 0, started with it', () => power('start'), 'error-500-agent-not-running', false],
      ['agent 0, stopped', () => power('stop'), 'error-500-vm-not-running', false],
      ['agent 0, started again', () => power('start'), 'error-500-agent-not-running', false],
      [
        'agent 1 written while it runs with agent 0 (pending)',
        () => put('agent=1'),
        'error-500-agent-not-running',
        false,
      ],
      ['agent 1 once restarted', restart, 'answers', true],
      ['the key deleted while it runs (pending)', () => put('delete=agent'), 'answers', true],
      ['no agent key, restarted', restart, 'error-500-agent-not-configured', false],
      ['no agent key, stopped', () => power('stop'), 'error-500-agent-not-configured', false],
    ];
    for (const [name, arrange, want, enabled] of rows) {
      await arrange();
      const got = await raw(fx, 'GET', `${base}/agent/network-get-interfaces`);
      if (want === 'answers') {
        expect([name, got.status], name).toEqual([name, 200]);
        const ifaces = readAnswer.agentNetworkInterfaces(JSON.parse(got.body).data);
        expect(
          ifaces.map((i) => i.name),
          name,
        ).toEqual(['lo', 'eth0']);
      } else {
        expect([name, got.status, got.reason], name).toEqual([
          name,
          render(want, vars).status,
          render(want, vars).reason,
        ]);
        expectKept(got, want, vars);
      }
      expect([name, 'agent' in (await flag())], name).toEqual([name, enabled]);
    }
  });

  it('Get over HTTPS: a VM restarted without its agent key and one with the agent off are both Stopped, each warned as its own case', async () => {
    // Create writes agent=1. A person then stops the VM, removes the key or switches the agent
    // off, and starts it again: the agent call answers the two apart (not configured; not
    // running, as for an agent still booting). Get does not make that call, the config decides,
    // and its warning names the case.
    const logs = createLogSink();
    const fx = await createProxmoxFixture(
      { logger: logs.logger },
      { nodes: ['pv1-1'], timing: fastTiming() },
    );
    fixtures.push(fx);
    const m = fx.model;
    const id = await fx.provider.create({
      name: 'proxy-agent-cases',
      namespace: 'default',
      uid: '6c1d5f0e-2b7a-4c0e-9d43-00000000a9e1',
      port: 3128,
      cloudInit: new TextEncoder().encode('#cloud-config\n'),
      placement: { machineType: 'small', image: 'debian-13' },
    });
    const vm = vmOf(m, id);
    const vars = { node: vm.node, vmid: vm.vmid };
    const base = `/api2/json/nodes/${vm.node}/qemu/${vm.vmid}`;
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const put = async (body: string) => {
      const r = await raw(fx, 'PUT', `${base}/config`, { body, headers: form });
      expect([r.status, body]).toEqual([200, body]);
    };
    const power = async (what: 'start' | 'stop') => {
      expect((await raw(fx, 'POST', `${base}/status/${what}`)).status).toBe(200);
      await m.settle();
    };
    const warnings = () =>
      logs.lines
        .filter((l) => l.level === 'warn')
        .map((l) => [l.msg, l.fields.vmid, l.fields.agent, l.fields.reason]);
    const message = 'proxmox vm without guest agent can never report an address';
    const rows: [string, string, string, string, string][] = [
      [
        'no agent key',
        'delete=agent',
        'error-500-agent-not-configured',
        'none',
        NO_AGENT_REASON.noKey,
      ],
      ['agent: 0', 'agent=0', 'error-500-agent-not-running', '0', NO_AGENT_REASON.off],
      [
        'enabled=0 among other options',
        `agent=${encodeURIComponent('enabled=0,fstrim_cloned_disks=1')}`,
        'error-500-agent-not-running',
        'enabled=0,fstrim_cloned_disks=1',
        NO_AGENT_REASON.off,
      ],
    ];
    expect((await fx.provider.get(id)).state).toBe('Running');
    const want: unknown[] = [];
    for (const [name, body, answer, agent, reason] of rows) {
      await power('stop');
      await put(body);
      await power('start');
      expectKept(await raw(fx, 'GET', `${base}/agent/network-get-interfaces`), answer, vars);
      const calls = m.calls.length;
      expect([name, (await fx.provider.get(id)).state]).toEqual([name, 'Stopped']);
      expect(m.calls.slice(calls), name).not.toContain('agentNetworkInterfaces');
      want.push([message, vm.vmid, agent, reason]);
      expect(warnings(), name).toEqual(want);
    }
    // The agent on again from the next start: Running, and no further warning.
    await put('agent=1');
    await power('stop');
    await power('start');
    expect((await fx.provider.get(id)).state).toBe('Running');
    expect(warnings()).toEqual(want);
  });

  it('the uploads pveproxy refuses', async () => {
    const fx = await https();
    const b = 'XyZ';
    const part = (name: string, value: string) =>
      `--${b}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    const file = (name: string) =>
      `--${b}\r\nContent-Disposition: form-data; name="filename"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\nDATA`;
    const mp = { 'content-type': `multipart/form-data; boundary=${b}` };
    const url = '/api2/json/nodes/pv1-1/storage/proxy-seeds/upload';
    expectKept(
      await raw(fx, 'POST', url, {
        body: `${part('content', 'iso')}${file('seed.txt')}\r\n--${b}--\r\n`,
        headers: mp,
      }),
      'error-400-upload-name',
      { node: 'pv1-1', storage: 'proxy-seeds' },
    );
    expectKept(
      await raw(fx, 'POST', url, {
        body: `${part('content', 'iso')}${file('seed.iso')}`,
        headers: mp,
      }),
      'error-500-upload-failed',
    );
    expectKept(
      await raw(fx, 'POST', url, {
        body: `${part('content', 'iso')}${file('seed.iso')}\r\n--${b}--\r\n`,
        headers: { ...mp, 'transfer-encoding': 'chunked' },
      }),
      'error-501-chunked',
    );
    const ok = await raw(fx, 'POST', url, {
      body: `${part('content', 'iso')}${file('seed.iso')}\r\n--${b}--\r\n`,
      headers: mp,
    });
    expect(ok.status).toBe(200);
    expect(readAnswer.uploadIso(JSON.parse(ok.body).data)).toMatch(
      /^UPID:pv1-1:.*:imgcopy::proxy-operator@pve!op:$/,
    );
  });

  it('the successful answers have the kept shape', async () => {
    const fx = await https();
    const m = fx.model;
    m.setTiming({ tasks: { ...m.timing.tasks, qmclone: 60_000 } });
    const v = await raw(fx, 'GET', '/api2/json/version');
    expect(JSON.parse(v.body)).toEqual(JSON.parse(captured('ok-version').body));
    expect(v.headers.connection).toBe('Keep-Alive');
    const n = await raw(fx, 'GET', '/api2/json/nodes/pv1-1/status');
    expect(JSON.parse(n.body)).toEqual(JSON.parse(captured('ok-node-status').body));
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const c = await raw(fx, 'POST', '/api2/json/nodes/pv1-1/qemu/9001/clone', {
      body: 'newid=100123&name=proxy-a&full=1',
      headers: form,
    });
    const upid = JSON.parse(c.body).data as string;
    const keys = (body: string) => Object.keys(JSON.parse(body).data).sort();
    const list = JSON.parse((await raw(fx, 'GET', '/api2/json/cluster/resources?type=vm')).body)
      .data as unknown[];
    const kept = JSON.parse(captured('ok-resources-mid-clone').body).data as unknown[];
    expect(list.find((e) => (e as { vmid: number }).vmid === 100123)).toEqual(
      kept.find((e) => (e as { vmid: number }).vmid === 100123),
    );
    expect(keys((await raw(fx, 'GET', '/api2/json/nodes/pv1-1/qemu/100123/config')).body)).toEqual(
      keys(captured('ok-config-mid-clone').body),
    );
    const running = await raw(
      fx,
      'GET',
      `/api2/json/nodes/pv1-1/tasks/${encodeURIComponent(upid)}/status`,
    );
    expect(keys(running.body)).toEqual(keys(captured('ok-task-running').body));
    expect(JSON.parse(running.body).data).toMatchObject({
      status: 'running',
      user: 'proxy-operator@pve',
      tokenid: 'op',
    });
  });
});
