// Peer: a real libvirtd with the QEMU driver (qemu:///system, TCG) and virtlogd, starting a real qemu process with no guest OS.
import { type Libvirtd, startLibvirtd } from '@proxy-op/libvirt-harness';
import { describeWithPeers } from '@proxy-op/testkit';
import * as vitest from 'vitest';
import {
  connect,
  DomainState,
  DomainUndefineFlags,
  ErrorCode,
  InterfaceAddressSource,
  isLibvirtError,
  type LibvirtClient,
  LibvirtError,
  MetadataType,
  unixDialer,
} from '../src/index.js';
import { DAEMON_PEERS } from './support/real.js';

const { afterAll, beforeAll, expect, it } = vitest;

const NS = 'https://proxy-op.dev/xmlns/instance';
const name = `rpc-qemu-${process.pid}`;
const xml = `<domain type="qemu">
  <name>${name}</name>
  <metadata><po:instance xmlns:po="${NS}" uid="0b5c"/></metadata>
  <memory unit="MiB">64</memory>
  <vcpu>1</vcpu>
  <os><type arch="x86_64" machine="pc">hvm</type></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <channel type="unix"><target type="virtio" name="org.qemu.guest_agent.0"/></channel>
    <interface type="user"><mac address="52:54:00:12:34:56"/><model type="virtio"/></interface>
    <video><model type="none"/></video>
    <memballoon model="none"/>
  </devices>
</domain>`;

describeWithPeers(
  vitest,
  'a real QEMU domain through libvirtd',
  [...DAEMON_PEERS, 'qemu-system-x86_64', 'virtlogd'],
  () => {
    let daemon: Libvirtd;
    let c: LibvirtClient;

    beforeAll(async () => {
      daemon = await startLibvirtd({ virtlogd: true });
      c = await connect({ dialer: unixDialer(daemon.socket), uri: 'qemu:///system' });
    }, 180_000);

    afterAll(async () => {
      await c?.close();
      await daemon?.virsh('qemu:///system', ['destroy', name]).catch(() => {});
      await daemon?.stop();
    });

    it('defines, starts, inspects, stops and removes a domain, as virsh sees it', {
      timeout: 180_000,
    }, async () => {
      const dom = await c.domainDefineXmlFlags(xml, 1); // VIR_DOMAIN_DEFINE_VALIDATE
      expect(await c.domainGetState(dom)).toMatchObject({ state: DomainState.SHUTOFF });
      expect(await c.domainGetMetadata(dom, MetadataType.ELEMENT, NS)).toMatch(/uid="0b5c"/);

      await c.domainCreate(dom);
      expect((await daemon.virsh('qemu:///system', ['domstate', name])).trim()).toBe('running');
      const running = await c.domainLookupByName(name);
      expect(running.id).toBeGreaterThan(0);
      expect(await c.domainGetState(running)).toMatchObject({ state: DomainState.RUNNING });

      // Starting it again is ERR_OPERATION_INVALID, which callers treat as "already running".
      const again = await c.domainCreate(running).catch((e: unknown) => e);
      expect(isLibvirtError(again, ErrorCode.ERR_OPERATION_INVALID)).toBe(true);

      // No guest OS, so no agent: a real answer the providers must handle.
      const agent = await c
        .domainInterfaceAddresses(running, InterfaceAddressSource.AGENT)
        .catch((e: unknown) => e);
      expect(isLibvirtError(agent, ErrorCode.ERR_AGENT_UNRESPONSIVE)).toBe(true);
      const arp = await c
        .domainInterfaceAddresses(running, InterfaceAddressSource.ARP)
        .catch((e: unknown) => e);
      expect(Array.isArray(arp) || arp instanceof LibvirtError).toBe(true);

      const live = await c.domainGetXmlDesc(running);
      expect(live).toContain(`<name>${name}</name>`);
      expect(live).toMatch(/<domain type='qemu' id='\d+'/);

      await c.domainDestroyFlags(running, 0);
      expect((await daemon.virsh('qemu:///system', ['domstate', name])).trim()).toBe('shut off');
      await c.domainUndefineFlags(
        dom,
        DomainUndefineFlags.MANAGED_SAVE |
          DomainUndefineFlags.SNAPSHOTS_METADATA |
          DomainUndefineFlags.NVRAM,
      );
      const gone = await c.domainLookupByName(name).catch((e: unknown) => e);
      expect(isLibvirtError(gone, ErrorCode.ERR_NO_DOMAIN)).toBe(true);
      expect(await daemon.virsh('qemu:///system', ['list', '--all', '--name'])).not.toContain(name);
    });
  },
);
