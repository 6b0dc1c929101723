// Peer: the real stack: libvirtd (Debian libvirt-daemon, QEMU under TCG) reached through a real sshd (openssh-server) over the production SSH transport, the test guest image (linux-image-amd64, busybox, qemu-guest-agent) served over HTTP, a real Linux guest; virsh on the same daemon as the oracle and as the original kvm (a domain defined with its metadata element). kvm2 runs beside kvm on the same host. Last, on the same stack: the proxy-op command (the operator package's bin) with this provider by its type, exporting its spans over OTLP/HTTP (JSON) to the receiver of @proxy-op/testkit in this test.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createProvider, isNotFound, type Provider } from '@proxy-op/contract';
import {
  type LibvirtStack,
  STACK_PEERS,
  startLibvirtStack,
  TEST_GUEST_PEERS,
} from '@proxy-op/libvirt-harness';
import { buildSeedISO } from '@proxy-op/nocloud';
import * as kvm2 from '@proxy-op/provider-kvm2';
import { createLogSink, createSpanRecorder } from '@proxy-op/providertest';
import { describeWithPeers, proxyOpCommand } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import { domainXml } from '../../libvirt-provider/src/xml.js';
import {
  describeStackLifecycle,
  IMAGE_PREFIX,
  namedOn,
  request,
  userData,
} from '../../libvirt-provider/test/support/stack-suite.js';
import { describeStackTrace } from '../../libvirt-provider/test/support/stack-trace.js';
import { METADATA_URI } from '../src/metadata.js';
import { providerModule } from '../src/module.js';
import { originalElement } from './support/original.js';

const { afterAll, beforeAll, expect, it } = vitest;

describeWithPeers(
  vitest,
  'kvm on a real libvirtd, through a real sshd, with a real guest',
  [...STACK_PEERS, ...TEST_GUEST_PEERS],
  () => {
    let stack: LibvirtStack;
    const logs = createLogSink();
    const spans = createSpanRecorder();
    const built: Provider[] = [];
    const build = async (config: Record<string, unknown>, deps: Record<string, unknown> = {}) => {
      const p = await createProvider(providerModule, 'kvm-ci', config, {
        logger: logs.logger,
        tracer: spans.tracer,
        ...deps,
      });
      built.push(p);
      return p;
    };
    const buildKvm2 = async () => {
      const p = await createProvider(kvm2.providerModule, 'kvm2-ci', stack.config(), {});
      built.push(p);
      return p;
    };
    const named = (name: string) => namedOn(stack, name);

    beforeAll(async () => {
      stack = await startLibvirtStack();
    }, 300_000);

    afterAll(async () => {
      for (const p of built) await p.close?.();
      await stack?.stop();
    });

    describeStackLifecycle(
      vitest,
      { stack: () => stack, build, logs, spans },
      { type: 'kvm', prefix: 'kvm' },
    );

    /**
     * A domain as the original kvm left it: an overlay on the cached image,
     * a seed, and the domain defined with the original's element and
     * started, all through virsh.
     */
    async function defineAsTheOriginal(name: string, uid: string): Promise<void> {
      const images = (await stack.volumes()).filter(
        (v) => v.startsWith(`${IMAGE_PREFIX}guest-`) && v.endsWith('.qcow2'),
      );
      expect(images, 'the cached image, from an earlier Create').toHaveLength(1);
      const image = (
        await stack.virsh(['vol-path', '--pool', stack.pool, images[0] as string])
      ).trim();
      await stack.virsh([
        'vol-create-as',
        stack.pool,
        `${name}.qcow2`,
        '1G',
        '--format',
        'qcow2',
        '--backing-vol',
        image,
        '--backing-vol-format',
        'qcow2',
      ]);
      const iso = buildSeedISO({ instanceId: name, userData, installGuestAgent: true });
      const isoFile = join(stack.dir, `${name}-seed.iso`);
      await writeFile(isoFile, iso);
      await stack.virsh(['vol-create-as', stack.pool, `${name}-seed.iso`, String(iso.byteLength)]);
      await stack.virsh(['vol-upload', '--pool', stack.pool, `${name}-seed.iso`, isoFile]);
      const path = async (vol: string) =>
        (await stack.virsh(['vol-path', '--pool', stack.pool, vol])).trim();
      const xml = domainXml({
        name,
        domainType: 'qemu',
        vcpus: 1,
        memoryMiB: 192,
        firmware: 'bios',
        metadata: originalElement({ managed: 'true', uid, createdAt: '2025-06-01T12:00:00+02:00' }),
        overlayPath: await path(`${name}.qcow2`),
        seedPath: await path(`${name}-seed.iso`),
        consoleLog: true,
      });
      const xmlFile = join(stack.dir, `${name}.xml`);
      await writeFile(xmlFile, xml);
      await stack.virsh(['define', xmlFile]);
      await stack.virsh(['start', name]);
    }

    it('lists, reads, adopts and deletes a domain the original kvm made; kvm2 leaves it alone', {
      timeout: 120_000,
    }, async () => {
      const name = 'proxy-orig';
      const id = `hosts/kvm1/domains/${name}`;
      await defineAsTheOriginal(name, 'uid-orig');
      // virsh reads back the original's element under its namespace, as kvm will.
      expect(await stack.virsh(['metadata', name, METADATA_URI])).toContain('<uid>uid-orig</uid>');

      const other = await buildKvm2();
      expect((await other.listByTag()).map((i) => i.id)).not.toContain(id);
      expect(await other.get(id).catch(isNotFound)).toBe(true);
      const notAdopted = await other
        .create(request(name, { uid: 'uid-orig' }))
        .catch((e: unknown) => e);
      expect(notAdopted).toMatchObject({ errorClass: 'Permanent' });
      await other.delete(id);
      expect(await named(name)).toEqual({
        domains: [name],
        volumes: [`${name}-seed.iso`, `${name}.qcow2`],
      });

      const kvm = await build(stack.config());
      const createdAt = new Date('2025-06-01T10:00:00Z');
      const location = { zone: 'kvm1' };
      expect(await kvm.listByTag()).toContainEqual({
        id,
        uid: 'uid-orig',
        createdAt,
        installation: 'default',
        location,
      });
      expect(await kvm.get(id)).toMatchObject({ id, uid: 'uid-orig', createdAt, location });
      const foreign = await kvm.create(request(name, { uid: 'uid-else' })).catch((e: unknown) => e);
      expect(foreign).toMatchObject({ errorClass: 'Permanent' });
      const before = await stack.volumes();
      expect(await kvm.create(request(name, { uid: 'uid-orig' }))).toBe(id);
      expect(await stack.volumes()).toEqual(before);
      await kvm.delete(id, { uid: 'uid-orig', installation: 'default' });
      expect(await named(name)).toEqual({ domains: [], volumes: [] });
    });

    it("leaves kvm2's domain alone: not listed, not found, not adopted, not deleted", {
      timeout: 120_000,
    }, async () => {
      const other = await buildKvm2();
      const kvm = await build(stack.config());
      const req = request('proxy-kvm2');
      const id = await other.create(req);
      expect((await kvm.listByTag()).map((i) => i.id)).not.toContain(id);
      expect(await kvm.get(id).catch(isNotFound)).toBe(true);
      expect(await kvm.create(req).catch((e: unknown) => e)).toMatchObject({
        errorClass: 'Permanent',
      });
      await kvm.delete(id);
      expect((await named(req.name)).domains).toEqual([req.name]);
      expect((await other.listByTag()).map((i) => i.id)).toEqual([id]);
      await other.delete(id);
      expect(await named(req.name)).toEqual({ domains: [], volumes: [] });
    });

    it('reports volumes left without their domain, dated by the pool, and removes them on Delete', {
      timeout: 120_000,
    }, async () => {
      const kvm = await build(stack.config());
      const a = request('proxy-orph-a');
      const b = request('proxy-orph-b');
      const idA = await kvm.create(a);
      const idB = await kvm.create(b);
      const started = Date.now();
      for (const r of [a, b]) {
        await stack.virsh(['destroy', r.name]);
        await stack.virsh(['undefine', r.name]);
      }
      // b keeps only its seed: proven by its label, read from the volume on the host.
      await stack.virsh(['vol-delete', '--pool', stack.pool, `${b.name}.qcow2`]);
      const listed = await kvm.listByTag();
      expect(listed.map((i) => [i.id, i.uid]).sort()).toEqual(
        [
          [idA, ''],
          [idB, ''],
        ].sort(),
      );
      for (const i of listed) {
        expect(Math.abs(i.createdAt.getTime() - started), i.id).toBeLessThan(120_000);
      }
      for (const id of [idA, idB]) await kvm.delete(id, { uid: '', installation: 'default' });
      expect(await named('proxy-orph')).toEqual({ domains: [], volumes: [] });
      expect(await kvm.listByTag()).toEqual([]);
    });

    describeStackTrace(
      vitest,
      { stack: () => stack, cli: proxyOpCommand(import.meta.url) },
      { type: 'kvm', prefix: 'kvm' },
    );
  },
);
