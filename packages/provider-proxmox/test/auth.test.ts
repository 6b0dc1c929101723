// Peer: the PVE model's guest agent, behind the HTTPS fake (real undici, real TLS, the API's
// parameter checks) and behind the seam fake: updateAuth writing the password file into the guest.
import { errorClassOf } from '@proxy-op/contract';
import { hashPassword, parsePasswordFile, verifyPassword } from '@proxy-op/forward-proxy';
import { createLogSink, createSpanRecorder, leakedIn } from '@proxy-op/providertest';
import { SERVICE_PASSWORD_FILE } from '@proxy-op/squid-config';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_PASSWORD_FILE_BYTES } from '../src/auth.js';
import { createProxmoxFixture, type ProxmoxFixture, vmOf } from './support/fixture.js';
import { fastTiming } from './support/pve-model.js';

const fixtures: ProxmoxFixture[] = [];
afterEach(async () => {
  for (const fx of fixtures.splice(0)) await fx.cleanup?.();
});

const OLD = 'web-1a2b3c:$6$rounds=1000$saltsaltsaltsalt$oldhash\n';
const NEW = `${OLD}web-4d5e6f:$6$rounds=1000$saltsaltsaltsalt$newhash\n`;
const auth = (text: string) => ({ realm: 'proxy-op default/web', passwordFile: Buffer.from(text) });

let n = 0;
async function running(peer: 'https' | 'seam' = 'seam') {
  const logs = createLogSink();
  const spans = createSpanRecorder();
  const fx = await createProxmoxFixture(
    { logger: logs.logger, tracer: spans.tracer },
    { peer, nodes: ['pv1-1'], timing: fastTiming() },
  );
  fixtures.push(fx);
  n++;
  const id = await fx.provider.create({
    name: `proxy-auth-${n}`,
    namespace: 'default',
    uid: `6c1d5f0e-2b7a-4c0e-9d43-a0${String(n).padStart(10, '0')}`,
    port: 3128,
    cloudInit: new TextEncoder().encode('#cloud-config\n'),
    placement: { machineType: 'small', image: 'debian-13' },
  });
  const vm = vmOf(fx.model, id);
  const update = fx.provider.updateAuth?.bind(fx.provider);
  if (update === undefined) throw new Error('the proxmox provider has no updateAuth');
  const callsSince = (before: number) => fx.model.calls.slice(before);
  return { fx, id, vm, logs, spans, update, callsSince };
}

describe('updateAuth through the Proxmox guest agent API', () => {
  it('over HTTPS: replaces the file whole, owner, group and mode kept, nothing staged left behind', async () => {
    const { fx, id, vm, logs, spans, update, callsSince } = await running('https');
    await fx.harness.deliverAuth?.(id, auth(OLD));
    const before = fx.model.calls.length;
    await update(id, auth(NEW));
    const f = vm.guest.files.get(SERVICE_PASSWORD_FILE);
    expect(f?.data.toString()).toBe(NEW);
    expect(f).toMatchObject({ mode: 0o640, uid: 0, gid: 13 });
    expect(vm.guest.files.has(`${SERVICE_PASSWORD_FILE}.new`)).toBe(false);
    expect(vm.guest.openHandles()).toBe(0);
    // The VM found and read, its state; cp waited for (running at the first poll, as a real
    // agent answers a program just started), the write, mv waited for.
    expect(callsSince(before)).toEqual([
      'clusterResources',
      'vmConfig',
      'vmStatus',
      'agentExec',
      'agentExecStatus',
      'agentExecStatus',
      'agentFileWrite',
      'agentExec',
      'agentExecStatus',
      'agentExecStatus',
    ]);
    for (const hash of ['oldhash', 'newhash']) {
      expect(leakedIn(logs.text(), hash)).toBeUndefined();
      expect(leakedIn(spans.text(), hash)).toBeUndefined();
    }
  });

  it('over HTTPS: a file with non-ASCII users and real hashes arrives byte for byte and verifies', async () => {
    // file-write with encode=1 would have Perl's base64 refuse a wide character: the provider
    // sends base64 itself (encode=0), so any bytes get through.
    const { fx, id, vm, update } = await running('https');
    await fx.harness.deliverAuth?.(id, auth(OLD));
    const user = 'zoë-日本';
    const password = 'p$:@% ü';
    const text = `${user}:${hashPassword(password, { rounds: 1000 })}\n`;
    await update(id, auth(text));
    const f = vm.guest.files.get(SERVICE_PASSWORD_FILE);
    expect(f?.data.equals(Buffer.from(text))).toBe(true);
    const hash = parsePasswordFile(f?.data.toString('utf8') ?? '').get(user);
    expect(hash !== undefined && verifyPassword(password, hash)).toBe(true);
  });

  it(`refuses a file over ${MAX_PASSWORD_FILE_BYTES} bytes as Permanent, naming passwordFile, before any call`, async () => {
    const { fx, id, update } = await running();
    const before = fx.model.calls.length;
    const big = 'u:'.padEnd(MAX_PASSWORD_FILE_BYTES + 1, 'x');
    const err = await update(id, auth(big)).catch((e: unknown) => e);
    expect(errorClassOf(err)).toBe('Permanent');
    expect(String(err)).toContain('passwordFile');
    expect(fx.model.calls.length).toBe(before);
  });

  it('a file of exactly the limit goes through', async () => {
    const { fx, id, vm, update } = await running('https');
    await fx.harness.deliverAuth?.(id, auth(OLD));
    const full = 'u:'.padEnd(MAX_PASSWORD_FILE_BYTES, 'x');
    await update(id, auth(full));
    expect(vm.guest.files.get(SERVICE_PASSWORD_FILE)?.data.byteLength).toBe(
      MAX_PASSWORD_FILE_BYTES,
    );
  });

  it('refuses a VM whose config has no guest agent as Permanent, calling no agent endpoint', async () => {
    const { fx, id, vm, update, callsSince } = await running();
    await fx.harness.deliverAuth?.(id, auth(OLD));
    delete vm.config.agent;
    const before = fx.model.calls.length;
    const err = await update(id, auth(NEW)).catch((e: unknown) => e);
    expect(errorClassOf(err)).toBe('Permanent');
    expect(String(err)).toContain('no guest agent');
    expect(callsSince(before).filter((c) => c.startsWith('agent'))).toEqual([]);
    expect(vm.guest.files.get(SERVICE_PASSWORD_FILE)?.data.toString()).toBe(OLD);
  });

  it('is Transient while the VM is stopped or its agent does not answer, and writes nothing', async () => {
    const { fx, id, vm, update } = await running();
    await fx.harness.deliverAuth?.(id, auth(OLD));
    vm.guestAgent = 'down';
    const noAgent = await update(id, auth(NEW)).catch((e: unknown) => e);
    expect(errorClassOf(noAgent)).toBe('Transient');
    expect(String(noAgent)).toContain('guest agent');
    expect(String(noAgent)).toContain('not running');
    vm.guestAgent = 'up';
    vm.status = 'stopped';
    vm.qmpstatus = 'stopped';
    vm.agentChannel = false;
    const stopped = await update(id, auth(NEW)).catch((e: unknown) => e);
    expect(errorClassOf(stopped)).toBe('Transient');
    expect(String(stopped)).toContain('is not running');
    expect(vm.guest.files.get(SERVICE_PASSWORD_FILE)?.data.toString()).toBe(OLD);
  });

  it('refuses a guest without the password file as Permanent, naming the file and what makes it', async () => {
    const { id, vm, update } = await running();
    const err = await update(id, auth(NEW)).catch((e: unknown) => e);
    expect(errorClassOf(err)).toBe('Permanent');
    expect(String(err)).toContain(`has no ${SERVICE_PASSWORD_FILE}`);
    expect(String(err)).toContain('cloud-init');
    expect(vm.guest.files.size).toBe(0);
  });

  it('a token without the guest agent privilege is Permanent, naming it, and the file stays', async () => {
    const { fx, id, vm, update } = await running('https');
    await fx.harness.deliverAuth?.(id, auth(OLD));
    fx.model.forbidden.set('agentExec', `/vms/${vm.vmid}, VM.GuestAgent.Unrestricted`);
    const err = await update(id, auth(NEW)).catch((e: unknown) => e);
    expect(errorClassOf(err)).toBe('Permanent');
    expect(String(err)).toContain('VM.GuestAgent.Unrestricted');
    expect(vm.guest.files.get(SERVICE_PASSWORD_FILE)?.data.toString()).toBe(OLD);
  });

  it('is NotFound for a VM that is gone', async () => {
    const { fx, id, vm, update } = await running();
    fx.model.removeVm(vm.vmid);
    const err = await update(id, auth(NEW)).catch((e: unknown) => e);
    expect(errorClassOf(err)).toBe('NotFound');
  });
});
