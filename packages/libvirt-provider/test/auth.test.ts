// Peer: the in-memory libvirt model with its guest agent behind the engine: updateAuth writing the
// password file into the guest (the real guest agent is the stack suite's, through virsh).
import { errorClassOf } from '@proxy-op/contract';
import { DomainState } from '@proxy-op/libvirt-rpc';
import { createLogSink, createSpanRecorder, leakedIn } from '@proxy-op/providertest';
import { SERVICE_PASSWORD_FILE } from '@proxy-op/squid-config';
import { afterEach, describe, expect, it } from 'vitest';
import { libvirtProviderModule } from '../src/module.js';
import { createModelFixture, type ModelFixture } from './support/fixture.js';
import { testFlavour } from './support/flavours.js';

const module = libvirtProviderModule(testFlavour);
const fixtures: ModelFixture[] = [];
afterEach(async () => {
  for (const fx of fixtures.splice(0)) await fx.cleanup?.();
});

const OLD = 'web-1a2b3c:$6$rounds=1000$saltsaltsaltsalt$oldhash\n';
const NEW = `${OLD}web-4d5e6f:$6$rounds=1000$saltsaltsaltsalt$newhash\n`;
const auth = (text: string) => ({ realm: 'proxy-op default/web', passwordFile: Buffer.from(text) });

let n = 0;
async function running() {
  const logs = createLogSink();
  const spans = createSpanRecorder();
  const fx = await createModelFixture(module, testFlavour, {
    logger: logs.logger,
    tracer: spans.tracer,
  });
  fixtures.push(fx);
  n++;
  const id = await fx.provider.create({
    name: `proxy-auth-${n}`,
    namespace: 'default',
    uid: `uid-auth-${n}`,
    port: 3128,
    cloudInit: new TextEncoder().encode('#cloud-config\n'),
    placement: { zone: 'kvm-a', machineType: 'small', image: 'tiny' },
  });
  const [, host = '', , name = ''] = id.split('/');
  const dom = fx.model.domain(host, name);
  return { fx, id, dom, logs, spans, update: fx.provider.updateAuth?.bind(fx.provider) };
}

describe('updateAuth through the guest agent', () => {
  it('replaces the password file whole, keeping its owner, group and mode, staging nothing left behind', async () => {
    const { fx, id, dom, logs, spans, update } = await running();
    await fx.harness.deliverAuth?.(id, auth(OLD));
    await update?.(id, auth(NEW));
    const f = dom.guest.files.get(SERVICE_PASSWORD_FILE);
    expect(f?.data.toString()).toBe(NEW);
    expect(f).toMatchObject({ mode: 0o640, uid: 0, gid: 13 });
    expect(dom.guest.files.has(`${SERVICE_PASSWORD_FILE}.new`)).toBe(false);
    expect(dom.guest.openHandles()).toBe(0);
    // A copy, the write and close, the rename, each program waited for.
    expect(dom.guest.commands).toEqual([
      'guest-exec',
      'guest-exec-status',
      'guest-exec-status',
      'guest-file-open',
      'guest-file-write',
      'guest-file-close',
      'guest-exec',
      'guest-exec-status',
      'guest-exec-status',
    ]);
    for (const hash of ['oldhash', 'newhash']) {
      expect(leakedIn(logs.text(), hash)).toBeUndefined();
      expect(leakedIn(spans.text(), hash)).toBeUndefined();
    }
  });

  it('refuses a guest without the password file as Permanent, naming the file and what makes it', async () => {
    const { dom, id, update } = await running();
    dom.agentIp = '10.1.2.3';
    const err = await update?.(id, auth(NEW)).catch((e: unknown) => e);
    expect(errorClassOf(err)).toBe('Permanent');
    expect(String(err)).toContain(`has no ${SERVICE_PASSWORD_FILE}`);
    expect(String(err)).toContain('cloud-init');
    expect(dom.guest.files.size).toBe(0);
  });

  it('is Transient while the agent is not connected or the domain is not running, and writes nothing', async () => {
    const { fx, id, dom, update } = await running();
    await fx.harness.deliverAuth?.(id, auth(OLD));
    dom.agentIp = undefined;
    const noAgent = await update?.(id, auth(NEW)).catch((e: unknown) => e);
    expect(errorClassOf(noAgent)).toBe('Transient');
    expect(String(noAgent)).toContain('QEMU guest agent is not connected');
    dom.state = DomainState.SHUTOFF;
    dom.reason = 1;
    const stopped = await update?.(id, auth(NEW)).catch((e: unknown) => e);
    expect(errorClassOf(stopped)).toBe('Transient');
    expect(String(stopped)).toContain('is not running');
    expect(dom.guest.files.get(SERVICE_PASSWORD_FILE)?.data.toString()).toBe(OLD);
  });

  it('closes the file handle when cancelled during the write, and the next call succeeds', async () => {
    const { fx, id, dom, update } = await running();
    await fx.harness.deliverAuth?.(id, auth(OLD));
    // Hold the agent call after cp's exec, its status polls and the open: the write.
    const calls = () => fx.model.calls.filter((c) => c.method === 'domainQemuAgentCommand').length;
    const before = calls();
    const gate = fx.model.holdNext('domainQemuAgentCommand', () => calls() - before === 5);
    const ac = new AbortController();
    const p = update?.(id, auth(NEW), { signal: ac.signal }).catch((e: unknown) => e);
    await gate.reached;
    ac.abort();
    expect(errorClassOf(await p)).toBe('Transient');
    gate.release();
    await new Promise((r) => setTimeout(r, 50));
    expect(dom.guest.openHandles()).toBe(0);
    expect(dom.guest.files.get(SERVICE_PASSWORD_FILE)?.data.toString()).toBe(OLD);
    await update?.(id, auth(NEW));
    expect(dom.guest.files.get(SERVICE_PASSWORD_FILE)?.data.toString()).toBe(NEW);
  });
});
