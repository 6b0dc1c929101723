// The XML the model reads and writes, as libvirt does: domain metadata
// elements without their prefix, volume definitions, volume descriptions.
import type { ModelPool, ModelVolume } from './model.js';

export const QCOW2_MAGIC = Buffer.from([0x51, 0x46, 0x49, 0xfb]);
/** What a fresh qcow2 overlay takes on disk (its header and tables), as the real pool reports. */
export const QCOW2_ALLOCATION = 200_704;

export function uuidString(u: Uint8Array): string {
  const h = Buffer.from(u).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export function unescapeText(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_m, e: string) => {
    const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
    if (e in named) return named[e] as string;
    return String.fromCodePoint(
      e.startsWith('#x') ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1)),
    );
  });
}

/** Attribute values as libxml2 writes them back. */
export function reescape(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/\n/g, '&#10;')
    .replace(/\r/g, '&#13;')
    .replace(/\t/g, '&#9;');
}

/** Text as libxml2 writes it back. */
function retext(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\r/g, '&#13;');
}

/** The attributes of an element, without the namespace declaration of `prefix`, and that namespace. */
function splitAttrs(attrs: string, prefix: string): { uri: string | undefined; kept: string } {
  let uri: string | undefined;
  const kept: string[] = [];
  for (const a of attrs.matchAll(/([\w.:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
    const value = unescapeText(a[2] ?? a[3] ?? '');
    if (a[1] === `xmlns:${prefix}`) uri = value;
    else kept.push(` ${a[1]}="${reescape(value)}"`);
  }
  return { uri, kept: kept.join('') };
}

/**
 * The metadata elements of a domain XML, by namespace URI, as libvirt
 * returns them: without their prefix or namespace declaration, and an
 * element with child elements re-indented by two spaces, one child a line.
 */
export function metadataOf(xml: string): Map<string, string> {
  const out = new Map<string, string>();
  const block = /<metadata>([\s\S]*?)<\/metadata>/.exec(xml)?.[1] ?? '';
  const attrs = '((?:\\s+[\\w.:-]+\\s*=\\s*(?:"[^"]*"|\'[^\']*\'))*)';
  for (const m of block.matchAll(
    new RegExp(`<([\\w.-]+):([\\w.-]+)${attrs}\\s*(?:/>|>([\\s\\S]*?)</\\1:\\2>)`, 'g'),
  )) {
    const [, prefix, element, rawAttrs, body] = m as unknown as [
      string,
      string,
      string,
      string,
      string | undefined,
    ];
    const { uri, kept } = splitAttrs(rawAttrs ?? '', prefix);
    if (uri === undefined) continue;
    if (body === undefined) {
      out.set(uri, `<${element}${kept}/>`);
      continue;
    }
    const children = [
      ...body.matchAll(
        new RegExp(`<${prefix}:([\\w.-]+)${attrs}\\s*(?:/>|>([^<]*)</${prefix}:\\1>)`, 'g'),
      ),
    ].map((c) => {
      const child = splitAttrs(c[2] ?? '', prefix).kept;
      if (c[3] === undefined) return `  <${c[1]}${child}/>`;
      return `  <${c[1]}${child}>${retext(unescapeText(c[3]))}</${c[1]}>`;
    });
    out.set(uri, `<${element}${kept}>\n${children.join('\n')}\n</${element}>`);
  }
  return out;
}

export function number(xml: string, re: RegExp): number | undefined {
  const m = re.exec(xml);
  return m === null ? undefined : Number(m[1]);
}

/** A new volume from its create XML, in the pool's dir. */
export function parseVolumeXml(xml: string, name: string, dir: string): ModelVolume {
  const backing = /<backingStore>([\s\S]*?)<\/backingStore>/.exec(xml)?.[1];
  const target = /<target>([\s\S]*?)<\/target>/.exec(xml)?.[1] ?? '';
  return {
    name,
    path: `${dir}/${name}`,
    format: /<format type="qcow2"\/>/.test(target) ? 'qcow2' : 'raw',
    capacity: number(xml, /<capacity(?:\s+unit="bytes")?>(\d+)<\/capacity>/) ?? 0,
    data: Buffer.alloc(0),
    backingPath:
      backing === undefined
        ? undefined
        : unescapeText(/<path>([^<]*)<\/path>/.exec(backing)?.[1] ?? ''),
    backingFormat: backing === undefined ? undefined : /<format type="(\w+)"\/>/.exec(backing)?.[1],
  };
}

/** A time as libvirt writes it in `<timestamps>`: seconds and nanoseconds. */
function stamp(ms: number): string {
  return `${Math.floor(ms / 1000)}.${String((ms % 1000) * 1_000_000).padStart(9, '0')}`;
}

/** A volume's XML as `storageVolGetXmlDesc` gives it (the fields the engine reads, in libvirt's layout). */
export function volumeXmlDesc(vol: ModelVolume, allocation: number, now: number): string {
  const t = stamp(vol.changedMs ?? now);
  const backing =
    vol.backingPath === undefined
      ? ''
      : `  <backingStore>\n    <path>${vol.backingPath}</path>\n    <format type='${vol.backingFormat ?? 'raw'}'/>\n  </backingStore>\n`;
  return [
    "<volume type='file'>",
    `  <name>${vol.name}</name>`,
    `  <key>${vol.path}</key>`,
    `  <capacity unit='bytes'>${vol.capacity}</capacity>`,
    `  <allocation unit='bytes'>${allocation}</allocation>`,
    `  <physical unit='bytes'>${vol.data.length}</physical>`,
    '  <target>',
    `    <path>${vol.path}</path>`,
    `    <format type='${vol.format}'/>`,
    '    <permissions>',
    '      <mode>0600</mode>',
    '      <owner>0</owner>',
    '      <group>0</group>',
    '    </permissions>',
    '    <timestamps>',
    `      <atime>${t}</atime>`,
    `      <mtime>${t}</mtime>`,
    `      <ctime>${t}</ctime>`,
    '      <btime>0</btime>',
    '    </timestamps>',
    '  </target>',
    `${backing}</volume>`,
    '',
  ].join('\n');
}

/** What a volume takes in its pool: a fresh overlay its tables, anything else its size. */
export function allocation(v: ModelVolume): number {
  return v.format === 'qcow2' && v.backingPath !== undefined
    ? QCOW2_ALLOCATION
    : Math.max(v.capacity, v.data.length);
}

/** A pool's state and sizes, as `storagePoolGetInfo` answers. */
export function poolInfo(p: ModelPool): {
  state: number;
  capacity: number;
  allocation: number;
  available: number;
} {
  const used = [...p.volumes.values()].reduce((n, v) => n + allocation(v), 0);
  return {
    state: p.running ? 2 : 0,
    capacity: p.capacity,
    allocation: used,
    available: Math.max(0, p.capacity - used),
  };
}

/** A pool refresh: a volume holding a qcow2 image reads as qcow2 of its virtual size, as libvirt probes it. */
export function probeFormats(p: ModelPool): void {
  for (const v of p.volumes.values()) {
    if (v.data.length >= 32 && v.data.subarray(0, 4).equals(QCOW2_MAGIC)) {
      v.format = 'qcow2';
      v.capacity = Number(v.data.readBigUInt64BE(24));
    }
  }
}
