/**
 * The XML the engine writes (domains and volumes) and the little it reads
 * back (an overlay's capacity and backing file). Every value is escaped;
 * nothing here holds cloud-init, which travels in the seed volume.
 *
 * @module
 */
import { escapeXml, unescapeXml } from './flavour.js';

/** What a domain is built from. */
export interface DomainSpec {
  readonly name: string;
  readonly domainType: 'kvm' | 'qemu';
  readonly vcpus: number;
  readonly memoryMiB: number;
  readonly firmware: 'bios' | 'uefi';
  /** The mark element, namespace declared (the flavour's `format`). */
  readonly metadata: string;
  readonly overlayPath: string;
  readonly seedPath: string;
  /** The bridge the NIC joins; QEMU user networking when undefined. */
  readonly bridge?: string | undefined;
  /** Log the serial console to `/var/log/libvirt/qemu/<name>-console.log`. */
  readonly consoleLog: boolean;
}

/** Where libvirt's QEMU driver keeps logs; the console log of a domain goes here. */
export const QEMU_LOG_DIR = '/var/log/libvirt/qemu';

/** The console log file of a domain (with `consoleLog`). */
export function consoleLogPath(name: string): string {
  return `${QEMU_LOG_DIR}/${name}-console.log`;
}

/**
 * The domain: the overlay as a virtio disk, the seed as a read-only CD-ROM
 * (IDE on the BIOS `pc` machine, SATA on the UEFI `q35` one), one virtio
 * NIC, the guest-agent channel, a serial console, a virtio RNG, and the
 * mark in `<metadata>` so the domain is never without it.
 */
export function domainXml(s: DomainSpec): string {
  const e = escapeXml;
  const uefi = s.firmware === 'uefi';
  const nic =
    s.bridge === undefined
      ? '<interface type="user"><model type="virtio"/></interface>'
      : `<interface type="bridge"><source bridge="${e(s.bridge)}"/><model type="virtio"/></interface>`;
  const log = s.consoleLog ? `<log file="${e(consoleLogPath(s.name))}" append="off"/>` : '';
  return [
    `<domain type="${s.domainType}">`,
    `  <name>${e(s.name)}</name>`,
    `  <metadata>${s.metadata}</metadata>`,
    `  <memory unit="MiB">${s.memoryMiB}</memory>`,
    `  <vcpu>${s.vcpus}</vcpu>`,
    `  <os${uefi ? ' firmware="efi"' : ''}><type arch="x86_64" machine="${uefi ? 'q35' : 'pc'}">hvm</type><boot dev="hd"/></os>`,
    '  <features><acpi/><apic/></features>',
    '  <on_poweroff>destroy</on_poweroff><on_reboot>restart</on_reboot><on_crash>destroy</on_crash>',
    '  <devices>',
    `    <disk type="file" device="disk"><driver name="qemu" type="qcow2"/><source file="${e(s.overlayPath)}"/><target dev="vda" bus="virtio"/></disk>`,
    `    <disk type="file" device="cdrom"><driver name="qemu" type="raw"/><source file="${e(s.seedPath)}"/><target dev="${uefi ? 'sda' : 'hdc'}" bus="${uefi ? 'sata' : 'ide'}"/><readonly/></disk>`,
    `    ${nic}`,
    '    <channel type="unix"><target type="virtio" name="org.qemu.guest_agent.0"/></channel>',
    `    <serial type="pty">${log}<target port="0"/></serial>`,
    '    <console type="pty"><target type="serial" port="0"/></console>',
    '    <rng model="virtio"><backend model="random">/dev/urandom</backend></rng>',
    '    <video><model type="none"/></video>',
    '  </devices>',
    '</domain>',
  ].join('\n');
}

/** A plain volume of `bytes` in `format`. */
export function volumeXml(name: string, bytes: number, format: 'raw' | 'qcow2' = 'raw'): string {
  return `<volume><name>${escapeXml(name)}</name><capacity unit="bytes">${bytes}</capacity><target><format type="${format}"/></target></volume>`;
}

/** A qcow2 overlay of `bytes` on the image at `backingPath`. */
export function overlayXml(
  name: string,
  bytes: number,
  backingPath: string,
  backingFormat: 'raw' | 'qcow2',
): string {
  return `<volume><name>${escapeXml(name)}</name><capacity unit="bytes">${bytes}</capacity><target><format type="qcow2"/></target><backingStore><path>${escapeXml(backingPath)}</path><format type="${backingFormat}"/></backingStore></volume>`;
}

/** The capacity and backing file of a volume, from its XML (`storageVolGetXmlDesc`). */
export function readVolumeXml(xml: string): {
  capacity: number | undefined;
  backingPath: string | undefined;
} {
  const cap = /<capacity(?:\s+unit=['"]bytes['"])?\s*>(\d+)<\/capacity>/.exec(xml);
  const backing = /<backingStore\b[^>]*>([\s\S]*?)<\/backingStore>/.exec(xml);
  const path = backing === null ? null : /<path>([^<]*)<\/path>/.exec(backing[1] ?? '');
  return {
    capacity: cap === null ? undefined : Number(cap[1]),
    backingPath: path === null ? undefined : unescapeXml(path[1] ?? ''),
  };
}

/**
 * A volume's own path and the newest of its modification and change times
 * (`<target>`'s `<timestamps>`, which file-backed pools report), from its
 * XML; undefined where the XML has none.
 */
export function readVolumeTarget(xml: string): {
  path: string | undefined;
  changedAt: Date | undefined;
} {
  const target = /<target>([\s\S]*?)<\/target>/.exec(xml)?.[1] ?? '';
  const path = /<path>([^<]*)<\/path>/.exec(target)?.[1];
  const times = /<timestamps>([\s\S]*?)<\/timestamps>/.exec(target)?.[1] ?? '';
  let newest: number | undefined;
  for (const tag of ['mtime', 'ctime']) {
    const m = new RegExp(`<${tag}>(\\d+)(?:\\.(\\d{1,9}))?</${tag}>`).exec(times);
    if (m === null) continue;
    const ms = Number(m[1]) * 1000 + Math.floor(Number((m[2] ?? '0').padEnd(9, '0')) / 1e6);
    if (newest === undefined || ms > newest) newest = ms;
  }
  return {
    path: path === undefined ? undefined : unescapeXml(path),
    changedAt: newest === undefined || newest === 0 ? undefined : new Date(newest),
  };
}
