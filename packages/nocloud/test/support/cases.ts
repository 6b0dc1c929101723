// Seeds with awkward inputs, shared by every real-reader suite so each
// reader is held to the same table.
import { gzipSync } from 'node:zlib';
import {
  buildISO,
  buildSeedISO,
  GUEST_AGENT_SCRIPT,
  type IsoFile,
  MULTIPART_BOUNDARY,
  type SeedOptions,
  seedFiles,
} from '../../src/index.js';
import { Random, utf8Text } from './random.js';

const enc = new TextEncoder();

/** A part cloud-init's processor should split vendor-data into. */
export interface ExpectedPart {
  readonly contentType: string;
  readonly filename?: string;
  readonly payload: Uint8Array;
}

export interface SeedCase {
  readonly title: string;
  readonly options: SeedOptions;
  /** What cloud-init's user-data processor should find in vendor-data. */
  readonly vendorParts: readonly ExpectedPart[];
}

export interface BuiltCase extends SeedCase {
  readonly iso: Uint8Array;
  /** The files the volume must hold, by name. */
  readonly files: ReadonlyMap<string, Uint8Array>;
}

const r = new Random(20261129);
const allBytes = Uint8Array.from({ length: 256 * 9 }, (_, i) => i % 256);
const agent = {
  contentType: 'text/x-shellscript',
  filename: 'guest-agent.sh',
  payload: enc.encode(GUEST_AGENT_SCRIPT),
};

function script(n: number, eol: string): Uint8Array {
  let s = `#!/bin/sh${eol}`;
  for (let i = 0; s.length < n; i++) s += `echo line ${i}${eol}`;
  return enc.encode(s.slice(0, n));
}

const cloudConfigUtf8 = enc.encode(
  '#cloud-config\r\nwrite_files:\r\n- path: /etc/motd\r\n  content: "grüße ☃ 😀"\r\n',
);
const collide = enc.encode(
  `#!/bin/sh\n# mentions --${MULTIPART_BOUNDARY} and --${MULTIPART_BOUNDARY}-1\r\necho done\r`,
);
const nested = enc.encode(
  [
    'Content-Type: multipart/mixed; boundary="admin"',
    'MIME-Version: 1.0',
    '',
    '--admin',
    'Content-Type: text/cloud-config',
    '',
    '#cloud-config',
    'runcmd: [true]',
    '--admin',
    'Content-Type: text/x-shellscript',
    'Content-Disposition: attachment; filename="admin.sh"',
    '',
    '#!/bin/sh',
    'echo admin',
    '--admin--',
    '',
  ].join('\n'),
);
const controls = enc.encode(
  '#!/bin/sh\nprintf "\x1b[1mbold\x1b[0m\x07"\n# a NUL: \x00 and a DEL: \x7f\n',
);
const gzCloudConfig = enc.encode('#cloud-config\npackages: [curl]\n');

export const seedCases: readonly SeedCase[] = [
  {
    title: 'typical: cloud-config user-data, guest agent, no configured vendor data',
    options: {
      instanceId: 'proxy-typical',
      userData: '#cloud-config\npackages: [squid]\nruncmd:\n  - systemctl restart squid\n',
    },
    vendorParts: [{ contentType: 'text/x-shellscript', payload: enc.encode(GUEST_AGENT_SCRIPT) }],
  },
  {
    title: 'empty user-data, guest agent off, no vendor-data file',
    options: { instanceId: 'empty', userData: '', installGuestAgent: false },
    vendorParts: [],
  },
  {
    title: 'binary user-data (every byte value) and a network-config',
    options: {
      instanceId: 'binary.case_1',
      hostname: 'binary.example.com',
      userData: allBytes,
      networkConfig: 'version: 2\nethernets:\n  eth0:\n    dhcp4: true\n',
      installGuestAgent: false,
    },
    vendorParts: [],
  },
  {
    title: 'UTF-8 and CRLF: user-data and a cloud-config vendor part',
    options: {
      instanceId: 'utf8',
      userData: utf8Text(r, 3000),
      vendorData: cloudConfigUtf8,
    },
    vendorParts: [agent, { contentType: 'text/cloud-config', payload: cloudConfigUtf8 }],
  },
  {
    title: 'files of exactly one sector (2048 bytes)',
    options: {
      instanceId: 'sector-exact',
      userData: r.bytes(2048),
      vendorData: script(2048, '\n'),
      networkConfig: enc.encode(`version: 2\n#${'x'.repeat(2048 - 13)}\n`),
    },
    vendorParts: [agent, { contentType: 'text/x-shellscript', payload: script(2048, '\n') }],
  },
  {
    title: 'files one byte over a sector (2049 bytes), CRLF script',
    options: {
      instanceId: 'sector-over',
      userData: r.bytes(2049),
      vendorData: script(2049, '\r\n'),
    },
    vendorParts: [agent, { contentType: 'text/x-shellscript', payload: script(2049, '\r\n') }],
  },
  {
    title: 'hundreds of KiB: 700 KiB user-data, 300 KiB vendor script',
    options: {
      instanceId: 'large',
      userData: r.bytes(700 * 1024),
      vendorData: script(300 * 1024, '\n'),
    },
    vendorParts: [agent, { contentType: 'text/x-shellscript', payload: script(300 * 1024, '\n') }],
  },
  {
    title: 'vendor data that contains the boundary, and a lone CR at its end',
    options: { instanceId: 'collide', userData: '#!/bin/sh\n', vendorData: collide },
    vendorParts: [agent, { contentType: 'text/x-shellscript', payload: collide }],
  },
  {
    title: 'vendor data that is a MIME multipart of its own (nested)',
    options: { instanceId: 'nested', userData: '#cloud-config\n', vendorData: nested },
    vendorParts: [
      agent,
      { contentType: 'text/cloud-config', payload: enc.encode('#cloud-config\nruncmd: [true]') },
      {
        contentType: 'text/x-shellscript',
        filename: 'admin.sh',
        payload: enc.encode('#!/bin/sh\necho admin'),
      },
    ],
  },
  {
    title: 'ASCII control characters (ESC, BEL, NUL, DEL) in a vendor script',
    options: { instanceId: 'controls', userData: '#cloud-config\n', vendorData: controls },
    vendorParts: [agent, { contentType: 'text/x-shellscript', payload: controls }],
  },
  {
    title: 'gzip vendor data, unpacked by cloud-init',
    options: {
      instanceId: 'gzip',
      userData: '#cloud-config\n',
      vendorData: gzipSync(gzCloudConfig),
    },
    vendorParts: [agent, { contentType: 'text/cloud-config', payload: gzCloudConfig }],
  },
  {
    title: 'configured vendor data only (guest agent off), kept as it is',
    options: {
      instanceId: 'vendor-only',
      userData: '#cloud-config\n',
      vendorData: '#cloud-config\nbootcmd: [echo hi]\n',
      installGuestAgent: false,
      label: 'CIDATA',
    },
    vendorParts: [
      {
        contentType: 'text/cloud-config',
        payload: enc.encode('#cloud-config\nbootcmd: [echo hi]\n'),
      },
    ],
  },
];

/** Each case with its volume and the files it must hold. */
export function buildCases(): BuiltCase[] {
  return seedCases.map((c) => ({
    ...c,
    iso: buildSeedISO(c.options),
    files: new Map(seedFiles(c.options).map((f) => [f.name, f.data])),
  }));
}

/**
 * Volumes from the generic writer that seeds never produce: a directory
 * over several sectors, long names, level 1 names that collide, empty
 * files first and last.
 */
export function writerCases(): { title: string; label: string; files: IsoFile[] }[] {
  const many: IsoFile[] = [];
  for (let i = 0; i < 60; i++) {
    many.push({
      name: `file-number-${String(i).padStart(3, '0')}-${'x'.repeat(30)}.txt`,
      data: `content ${i}\n`,
    });
  }
  return [
    { title: 'a root directory over several sectors', label: 'MANY_FILES', files: many },
    {
      title: 'names whose level 1 forms collide, and a 64-character name',
      label: 'names',
      files: [
        { name: 'meta-data', data: 'a' },
        { name: 'meta-data2', data: 'b' },
        { name: 'meta_data', data: 'c' },
        { name: 'Meta-Data', data: 'd' },
        { name: 'n'.repeat(64), data: 'e' },
        { name: 'archive.tar.gz', data: r.bytes(5000) },
      ],
    },
    {
      title: 'empty files first and last',
      label: 'E',
      files: [
        { name: '0-empty', data: '' },
        { name: 'middle', data: r.bytes(4096) },
        { name: 'zz-empty', data: new Uint8Array(0) },
      ],
    },
  ];
}

/** A volume for the real readers and the files it must hold. */
export interface Volume {
  readonly title: string;
  readonly label: string;
  readonly iso: Uint8Array;
  readonly files: ReadonlyMap<string, Uint8Array>;
}

/** Every seed case and every writer case, built. */
export function allVolumes(): Volume[] {
  const seeds = buildCases().map((c) => ({
    title: c.title,
    label: c.options.label ?? 'cidata',
    iso: c.iso,
    files: c.files,
  }));
  const writers = writerCases().map((c) => ({
    title: `writer: ${c.title}`,
    label: c.label,
    iso: buildISO({ label: c.label, files: c.files }),
    files: new Map(
      c.files.map((f) => [f.name, typeof f.data === 'string' ? enc.encode(f.data) : f.data]),
    ),
  }));
  return [...seeds, ...writers];
}
