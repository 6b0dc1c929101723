// The real-stack suite every libvirt provider on the engine runs (kvm2's,
// then kvm's): the lifecycle on a real libvirtd through a real sshd with a
// real guest, the cached image, concurrent Creates, a libvirtd restart, SSH
// cut mid-upload, a Create cancelled at each of its calls, refused keys and
// a SHA-256 mismatch. A provider's stack.test.ts starts the stack with
// startLibvirtStack and registers these tests, then its own.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorClassOf as classOf, isNotFound, type Provider } from '@proxy-op/contract';
import {
  agentAddresses,
  dumpedSeedFile,
  guestExec,
  guestFile,
  type LibvirtStack,
  TEST_GUEST_BOOT_BUDGET_MS,
  TEST_GUEST_MARK,
} from '@proxy-op/libvirt-harness';
import { type LogSink, leakedIn, type SpanRecorder } from '@proxy-op/providertest';
import type * as Vitest from 'vitest';
import { sshTransport } from '../../src/adapter.js';
import { StepTransport } from './stepper.js';

export const IMAGE_PREFIX = 'proxy-op-image-';

/**
 * user-data that travels byte for byte: a cloud-config head, a nonce (so an
 * old console cannot pass), UTF-8, CRLF and every byte value.
 */
export const userData = Buffer.concat([
  Buffer.from(`#cloud-config\n# nonce ${randomBytes(16).toString('hex')}\r\n# grüße €\n`),
  Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
]);

/** A Create request on the stack's host `kvm1` with its image `guest`. */
export function request(name: string, patch: Record<string, unknown> = {}) {
  return {
    name,
    namespace: 'default',
    uid: `uid-${name}`,
    port: 3128,
    cloudInit: userData,
    placement: { zone: 'kvm1', machineType: 'small', image: 'guest' },
    ...patch,
  };
}

/**
 * How long a cancelled Create may take to reject while the call it was
 * cancelled at is still held. The call stays held until the wait ends, so
 * a rejection inside it proves the Create did not wait for that call; the
 * length only has to outlast a loaded machine's stalls.
 */
const WHILE_HELD_MS = 10_000;

/** How `p` settles within `ms`. */
export async function settle<T>(
  p: Promise<T>,
  ms: number,
): Promise<'resolved' | 'rejected' | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<'pending'>((r) => {
    timer = setTimeout(() => r('pending'), ms);
  });
  try {
    return await Promise.race([
      p.then(
        () => 'resolved' as const,
        () => 'rejected' as const,
      ),
      pending,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The domains and volumes of `name` on the stack, per virsh. */
export async function namedOn(
  stack: LibvirtStack,
  name: string,
): Promise<{ domains: string[]; volumes: string[] }> {
  return {
    domains: (await stack.domains()).filter((d) => d === name),
    volumes: (await stack.volumes()).filter((v) => v.startsWith(name)),
  };
}

/** What the shared tests need from the provider's suite. */
export interface StackSuiteContext {
  /** The running stack (started in the suite's beforeAll). */
  readonly stack: () => LibvirtStack;
  /** Builds a provider of the module under test, logging and tracing to `logs` and `spans`; the suite closes it. */
  readonly build: (
    config: Record<string, unknown>,
    deps?: Record<string, unknown>,
  ) => Promise<Provider>;
  readonly logs: LogSink;
  readonly spans: SpanRecorder;
}

/** Registers the shared real-stack tests for a provider of `type` with span prefix `prefix`. */
export function describeStackLifecycle(
  vitest: typeof Vitest,
  ctx: StackSuiteContext,
  o: { readonly type: string; readonly prefix: string },
): void {
  const { expect, it } = vitest;
  const { build, logs, spans } = ctx;
  let provider: Provider;
  let stack: LibvirtStack;
  const named = (name: string) => namedOn(stack, name);
  // Registered after the suite's own beforeAll, so the stack is up by then.
  vitest.beforeAll(() => {
    stack = ctx.stack();
  });

  it('runs the lifecycle: check, create (download, cache, upload, seed, define, start), Running with the agent address, the seed byte for byte, adopt, list, delete, nothing left', {
    timeout: TEST_GUEST_BOOT_BUDGET_MS + 120_000,
  }, async () => {
    provider = await build(stack.config());
    expect(stack.relay.accepted, 'building the provider opened no connection').toBe(0);
    const [health] = await provider.check!();
    expect(health).toMatchObject({ target: 'kvm1', reason: 'Reachable', ready: true });
    expect(health?.details).toMatchObject({
      user: stack.sshd.username,
      pool: stack.pool,
      poolState: 'running',
    });
    expect(health?.details.libvirtVersion).toMatch(/^\d+\.\d+\.\d+$/);

    const req = request('proxy-life');
    const id = await provider.create(req);
    expect(id).toBe('hosts/kvm1/domains/proxy-life');
    expect(stack.images.requests(stack.imagePath)).toBe(1);
    expect(await stack.virsh(['domstate', 'proxy-life'])).toMatch(/running/);
    const volumes = await stack.volumes();
    expect(volumes.filter((v) => v.startsWith(IMAGE_PREFIX))).toHaveLength(2);
    expect(volumes).toEqual(expect.arrayContaining(['proxy-life.qcow2', 'proxy-life-seed.iso']));

    // A repeat Create adopts: the same ID, nothing new, no download.
    expect(await provider.create(req)).toBe(id);
    expect(await stack.volumes()).toEqual(volumes);
    expect(await stack.domains()).toEqual(['proxy-life']);
    expect(stack.images.requests(stack.imagePath)).toBe(1);

    // Get reaches Running with the address the guest agent reports, as virsh sees it.
    const started = Date.now();
    let inst = await provider.get(id);
    expect(['Provisioning', 'Running']).toContain(inst.state);
    while (inst.state !== 'Running' && Date.now() - started < TEST_GUEST_BOOT_BUDGET_MS) {
      await new Promise((r) => setTimeout(r, 1000));
      inst = await provider.get(id);
    }
    expect(
      inst.state,
      `Running within ${TEST_GUEST_BOOT_BUDGET_MS / 1000} s; console:\n${await stack.consoleLog('proxy-life')}`,
    ).toBe('Running');
    console.info(
      `${o.type} stack: Running at ${inst.ip} ${Date.now() - started} ms after Create returned`,
    );
    expect(await agentAddresses(stack, 'proxy-life')).toContain(`${inst.ip}/24`);
    expect(inst).toMatchObject({ id, uid: req.uid, installation: 'default' });

    // updateAuth through the real guest agent. A guest without the password file (a proxy made
    // without credentials) is refused, naming the file; with the file cloud-init would have
    // written (root, the proxy group, 0640), it is replaced whole, owner, group and mode kept,
    // nothing staged left behind, as virsh reads it back.
    const passwd = (text: string) => ({ realm: 'stack', passwordFile: Buffer.from(text) });
    const missing = await provider.updateAuth!(id, passwd('a:x\n')).catch((e: unknown) => e);
    expect(classOf(missing)).toBe('Permanent');
    expect(String(missing)).toContain('/etc/squid/passwd');
    const planted = await guestExec(stack, 'proxy-life', '/bin/sh', [
      '-c',
      'mkdir -p /etc/squid && echo old:x > /etc/squid/passwd && chgrp 13 /etc/squid/passwd && chmod 0640 /etc/squid/passwd',
    ]);
    expect(planted).toMatchObject({ exitCode: 0 });
    const lines = 'ct-new:$6$rounds=1000$salt$hash\nct-old:$6$rounds=1000$salt$hash2\n';
    await provider.updateAuth!(id, passwd(lines));
    expect((await guestFile(stack, 'proxy-life', '/etc/squid/passwd'))?.toString()).toBe(lines);
    const mode = await guestExec(stack, 'proxy-life', '/bin/stat', [
      '-c',
      '%a %u %g',
      '/etc/squid/passwd',
    ]);
    expect(mode.stdout.trim()).toBe('640 0 13');
    expect(await guestFile(stack, 'proxy-life', '/etc/squid/passwd.new')).toBeUndefined();
    expect(logs.text()).not.toContain('ct-new');

    // The guest's kernel mounted the seed and read user-data intact.
    const consoleText = await stack.consoleLog('proxy-life');
    expect(consoleText).toContain(`${TEST_GUEST_MARK} file user-data ${userData.byteLength} `);
    expect(dumpedSeedFile(consoleText, 'user-data')?.equals(userData)).toBe(true);

    const listed = await provider.listByTag();
    expect(listed.map((i) => [i.id, i.uid])).toEqual([[id, req.uid]]);

    await provider.delete(id);
    expect(await stack.domains()).toEqual([]);
    expect((await stack.volumes()).filter((v) => !v.startsWith(IMAGE_PREFIX))).toEqual([]);
    expect(await provider.get(id).catch(isNotFound)).toBe(true);
    await provider.delete(id);

    // Nothing secret or private went into the logs or spans.
    expect(leakedIn(logs.text(), stack.sshd.clientKey.trim())).toBeUndefined();
    expect(logs.text()).not.toContain('nonce');
    expect(spans.spans().map((s) => s.name)).toEqual(
      expect.arrayContaining([
        `${o.prefix}.dial`,
        `${o.prefix}.download`,
        `${o.prefix}.storageVolUpload`,
        `${o.prefix}.domainDefineXml`,
      ]),
    );
  });

  it('creates again from the cached image, without a download', {
    timeout: 120_000,
  }, async () => {
    const id = await provider.create(request('proxy-cached'));
    expect(stack.images.requests(stack.imagePath)).toBe(1);
    await provider.delete(id);
    expect(await named('proxy-cached')).toEqual({ domains: [], volumes: [] });
  });

  it('gives two Creates for one name at once one domain', { timeout: 120_000 }, async () => {
    const req = request('proxy-twice');
    const [a, b] = await Promise.all([provider.create(req), provider.create(req)]);
    expect(a).toBe(b);
    expect(await named('proxy-twice')).toEqual({
      domains: ['proxy-twice'],
      volumes: ['proxy-twice-seed.iso', 'proxy-twice.qcow2'],
    });
    await provider.delete(a);
    expect(await named('proxy-twice')).toEqual({ domains: [], volumes: [] });
  });

  it('redials after libvirtd restarts between calls', { timeout: 120_000 }, async () => {
    const id = await provider.create(request('proxy-restart'));
    const before = stack.relay.accepted;
    await stack.daemon.restart();
    expect(['Provisioning', 'Running']).toContain((await provider.get(id)).state);
    expect(stack.relay.accepted).toBeGreaterThan(before);
    await provider.delete(id);
    expect(await named('proxy-restart')).toEqual({ domains: [], volumes: [] });
  });

  it('caches nothing when SSH is cut mid-upload, and the retry succeeds', {
    timeout: 120_000,
  }, async () => {
    const p = await build(
      stack.config({
        images: { other: { url: stack.images.url(stack.imagePath), sha256: stack.imageSha } },
      }),
    );
    const req = request('proxy-cut', {
      placement: { zone: 'kvm1', machineType: 'small', image: 'other' },
    });
    stack.relay.cutAfter(4 * 1024 * 1024);
    const err = await p.create(req).catch((e: unknown) => e);
    stack.relay.cutAfter(undefined);
    expect(err).toMatchObject({ errorClass: 'Transient' });
    expect(stack.relay.cut).toBe(1);
    const left = await stack.volumes();
    expect(left.filter((v) => v.startsWith(`${IMAGE_PREFIX}other-`))).toEqual([]);
    expect(left.filter((v) => v.startsWith('proxy-cut'))).toEqual([]);
    const id = await p.create(req);
    expect(
      (await stack.volumes()).filter((v) => v.startsWith(`${IMAGE_PREFIX}other-`)),
    ).toHaveLength(2);
    await p.delete(id);
  });

  // A hang detector, not a speed claim: about 20 Creates and Deletes of a domain on the real
  // stack take 150 s on an idle 2-core machine and several times that beside other guests.
  it('leaves no duplicate when a Create is cancelled at each of its calls and retried', {
    timeout: 900_000,
  }, async () => {
    const step = new StepTransport(sshTransport());
    const p = await build(stack.config(), { transport: step });
    let finished = false;
    let k = 0;
    for (; k < 64 && !finished; k++) {
      const req = request(`proxy-step-${k}`);
      const gate = step.holdAt(k);
      const ac = new AbortController();
      const creating = p.create(req, { signal: ac.signal });
      creating.catch(() => {});
      const first = await Promise.race([
        gate.reached.then(() => 'reached' as const),
        creating.then(
          () => 'finished' as const,
          () => 'failed' as const,
        ),
      ]);
      if (first === 'reached') {
        ac.abort();
        expect(
          await settle(creating, WHILE_HELD_MS),
          `Create cancelled at call ${k + 1} (${step.log.at(-1)})`,
        ).toBe('rejected');
      } else {
        expect(first, `Create with nothing held after ${k} calls`).toBe('finished');
        finished = true;
      }
      gate.release();
      const id = await p.create(req);
      expect(await named(req.name), `after cancelling at call ${k + 1} and retrying`).toEqual({
        domains: [req.name],
        volumes: [`${req.name}-seed.iso`, `${req.name}.qcow2`],
      });
      await p.delete(id);
      expect(await named(req.name), `after deleting, cancelled at call ${k + 1}`).toEqual({
        domains: [],
        volumes: [],
      });
    }
    expect(finished, 'Create finished within 64 calls').toBe(true);
    console.info(`${o.type} stack: Create cancelled at each of its ${k - 1} calls and retried`);
  });

  it('refuses a wrong host key and a wrong SSH key as Permanent, saying what to fix', {
    timeout: 60_000,
  }, async () => {
    const other = await stack.keygen();
    const knownHosts = join(stack.dir, 'wrong_known_hosts');
    const [type, key] = other.publicKey.split(/\s+/);
    await writeFile(knownHosts, `[127.0.0.1]:${stack.relay.port} ${type} ${key}\n`);
    const wrongHost = await build(stack.config({ knownHostsFile: knownHosts }));
    const hostErr = await wrongHost.create(request('proxy-hostkey')).catch((e: unknown) => e);
    expect(hostErr).toMatchObject({ errorClass: 'Permanent' });
    expect((hostErr as Error).message).toContain(
      `is not accepted by ${o.type}.knownHostsFile ${knownHosts}`,
    );
    expect((await wrongHost.check!())[0]?.reason).toBe('Unauthorized');

    const keyFile = join(stack.dir, 'wrong-key');
    await writeFile(keyFile, other.privateKey, { mode: 0o600 });
    const wrongKey = await build(stack.config({ sshKeyFile: keyFile }));
    const keyErr = await wrongKey.create(request('proxy-key')).catch((e: unknown) => e);
    expect(keyErr).toMatchObject({ errorClass: 'Permanent' });
    expect((keyErr as Error).message).toContain(
      `refused the key in ${o.type}.sshKeyFile ${keyFile}`,
    );
    expect((await wrongKey.check!())[0]?.reason).toBe('Unauthorized');
    expect(
      leakedIn(JSON.stringify([hostErr, keyErr, String(keyErr)]), other.privateKey.trim()),
    ).toBeUndefined();
    expect(await stack.domains()).toEqual([]);
  });

  it('caches nothing from a download whose SHA-256 does not match (Permanent)', {
    timeout: 60_000,
  }, async () => {
    const bad = await build(
      stack.config({
        images: { corrupt: { url: stack.images.url(stack.imagePath), sha256: '0'.repeat(64) } },
      }),
    );
    const err = await bad
      .create(
        request('proxy-sha', {
          placement: { zone: 'kvm1', machineType: 'small', image: 'corrupt' },
        }),
      )
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ errorClass: 'Permanent' });
    expect((err as Error).message).toContain(`the catalogue says ${'0'.repeat(64)}`);
    const left = await stack.volumes();
    expect(left.filter((v) => v.startsWith(`${IMAGE_PREFIX}corrupt-`))).toEqual([]);
    expect(left.filter((v) => v.startsWith('proxy-sha'))).toEqual([]);
  });
}
