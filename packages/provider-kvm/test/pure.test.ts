// Peer: none (kvm's mark element and config block, in-process; the element as libvirt returns it is held to a real libvirtd by the engine's seam contract and by test/stack.test.ts).
import { type ConfigError, createProvider, type Mark } from '@proxy-op/contract';
import { MarkFormatError } from '@proxy-op/libvirt-provider';
import { describe, expect, it } from 'vitest';
import { metadataOf } from '../../libvirt-provider/test/support/model-xml.js';
import { kvmCompat } from '../src/compat.js';
import { formatKvmMark, METADATA_URI, parseCreatedAt, parseKvmMark } from '../src/metadata.js';
import { configSchema, flavour, profile, providerModule } from '../src/module.js';
import { storedOriginal } from './support/original.js';

describe("kvm's mark element", () => {
  it("reads the original's element as libvirt returns it: no installation means the default one", () => {
    expect(
      parseKvmMark(
        storedOriginal({ managed: 'true', uid: 'uid-1', createdAt: '2025-11-02T10:20:30Z' }),
      ),
    ).toEqual({
      uid: 'uid-1',
      createdAt: new Date('2025-11-02T10:20:30Z'),
      installation: 'default',
    });
  });

  it('writes the same children plus the installation, in its namespace, and reads them back', () => {
    const mark: Mark = {
      uid: `u&<"'>1`,
      createdAt: new Date('2026-01-02T03:04:05.678Z'),
      installation: 'blue',
    };
    const xml = formatKvmMark(mark);
    expect(xml).toBe(
      `<kvm:instance xmlns:kvm="${METADATA_URI}"><kvm:managed>true</kvm:managed>` +
        '<kvm:uid>u&amp;&lt;&quot;&apos;&gt;1</kvm:uid>' +
        '<kvm:createdAt>2026-01-02T03:04:05Z</kvm:createdAt>' +
        '<kvm:installation>blue</kvm:installation></kvm:instance>',
    );
    // What libvirt hands back for it (the model's reading is held to a real libvirtd).
    const stored = metadataOf(`<metadata>${xml}</metadata>`).get(METADATA_URI) as string;
    expect(stored).toBe(
      `<instance>\n  <managed>true</managed>\n  <uid>u&amp;&lt;"'&gt;1</uid>\n  <createdAt>2026-01-02T03:04:05Z</createdAt>\n  <installation>blue</installation>\n</instance>`,
    );
    expect(parseKvmMark(stored)).toEqual({ ...mark, createdAt: new Date('2026-01-02T03:04:05Z') });
  });

  it("reads Go's booleans and times: any offset, up to nanoseconds; an unreadable time is epoch 0", () => {
    for (const managed of ['true', 'True', 'TRUE', 't', '1', ' true ']) {
      expect(parseKvmMark(storedOriginal({ managed, uid: 'u' }))?.uid, managed).toBe('u');
    }
    for (const managed of ['false', '0', 'F', '']) {
      expect(parseKvmMark(storedOriginal({ managed, uid: 'u' })), managed).toBeUndefined();
    }
    expect(parseKvmMark('<instance>\n  <uid>u</uid>\n</instance>')).toBeUndefined();
    expect(() => parseKvmMark(storedOriginal({ managed: 'yes' }))).toThrow(MarkFormatError);
    expect(parseCreatedAt('2026-01-02T05:04:05.123456789+02:00')).toEqual(
      new Date('2026-01-02T03:04:05.123Z'),
    );
    expect(parseCreatedAt('2026-01-02T03:04:05-00:30')).toEqual(new Date('2026-01-02T03:34:05Z'));
    expect(parseCreatedAt('2026-01-02t03:04:05z')).toEqual(new Date('2026-01-02T03:04:05Z'));
    for (const bad of ['', 'yesterday', '2026-01-02', '2026-02-30T00:00:00Z', '1767323045']) {
      expect(parseCreatedAt(bad), bad).toEqual(new Date(0));
    }
  });

  it('reads the mark from attributes too, under the contract keys, and CDATA and entities in text', () => {
    expect(
      parseKvmMark(
        '<instance proxy-operator-managed="true" proxy-operator-uid="u-a" proxy-operator-created-at="2026-01-02T03:04:05Z" proxy-operator-installation="green"/>',
      ),
    ).toEqual({ uid: 'u-a', createdAt: new Date('2026-01-02T03:04:05Z'), installation: 'green' });
    expect(
      parseKvmMark(
        '<instance>\n  <managed>true</managed>\n  <uid><![CDATA[u<&>b]]></uid>\n  <extra>ignored</extra>\n  <createdAt>\n    2026-01-02T03:04:05Z\n  </createdAt>\n</instance>',
      ),
    ).toEqual({
      uid: 'u<&>b',
      createdAt: new Date('2026-01-02T03:04:05Z'),
      installation: 'default',
    });
  });

  it('refuses another element', () => {
    expect(() => parseKvmMark('<owner managed="true"/>')).toThrow(MarkFormatError);
    expect(() => parseKvmMark('not xml')).toThrow(MarkFormatError);
  });
});

describe("kvm's config block", () => {
  const original = {
    sshKeyFile: '/etc/proxy-operator/kvm/id_ed25519',
    knownHostsFile: '/etc/proxy-operator/kvm/known_hosts',
    insecureIgnoreHostKey: false,
    diskSizeGb: 0,
    vendorData: '',
    installGuestAgent: true,
    images: {
      'debian-13': {
        url: 'https://cloud.debian.org/images/cloud/trixie/latest/debian-13-genericcloud-amd64.qcow2',
        sha256: 'A'.repeat(64),
        format: '',
        firmware: '',
      },
    },
    machineTypes: { small: { vcpus: 1, memoryMiB: 1024 } },
    hosts: [
      {
        name: 'beelink',
        address: '192.168.1.20',
        user: 'proxyop',
        socket: '',
        pool: '',
        bridge: 'br0',
      },
      { name: 'nas1', address: 'nas1.lan', user: 'proxyop', socket: null, pool: 'vms', bridge: '' },
    ],
  };

  it("accepts the original's block as it was written, Go's empty values meaning the defaults", async () => {
    const r = await configSchema['~standard'].validate(original);
    expect(r).not.toHaveProperty('issues');
    expect('value' in r ? r.value : undefined).toEqual({
      hosts: [
        {
          name: 'beelink',
          address: '192.168.1.20',
          port: 22,
          user: 'proxyop',
          socket: '/var/run/libvirt/libvirt-sock',
          pool: 'default',
          bridge: 'br0',
          uri: 'qemu:///system',
          domainType: 'kvm',
        },
        {
          name: 'nas1',
          address: 'nas1.lan',
          port: 22,
          user: 'proxyop',
          socket: '/var/run/libvirt/libvirt-sock',
          pool: 'vms',
          uri: 'qemu:///system',
          domainType: 'kvm',
        },
      ],
      sshKeyFile: '/etc/proxy-operator/kvm/id_ed25519',
      knownHostsFile: '/etc/proxy-operator/kvm/known_hosts',
      insecureIgnoreHostKey: false,
      diskSizeGb: 10,
      installGuestAgent: true,
      consoleLog: true,
      images: {
        'debian-13': {
          url: original.images['debian-13'].url,
          sha256: 'a'.repeat(64),
          format: 'qcow2',
          firmware: 'bios',
        },
      },
      machineTypes: { small: { vcpus: 1, memoryMiB: 1024 } },
    });
  });

  it('reports every problem at once under kvm., and keeps what is not empty', async () => {
    const bad = {
      ...original,
      diskSizeGb: -1,
      hosts: [{ name: 'Beelink', address: '192.168.1.20', user: 'proxyop', pool: 'a b' }],
      images: { x: { url: 'ftp://x', sha256: '' } },
    };
    const err = await createProvider(providerModule, 'kvm-home', bad, {}).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'PROVIDER_CONFIG_INVALID' });
    expect((err as ConfigError).problems).toEqual([
      'kvm.hosts[0].name: "Beelink" is not a host name (a lowercase DNS label: a-z, 0-9 and "-")',
      'kvm.hosts[0].pool: "a b" is not a storage pool name',
      'kvm.diskSizeGb: must be an integer from 1 to 65536',
      'kvm.images.x.url: must be an http or https URL',
      'kvm.images.x.sha256: must be a non-empty string',
    ]);
  });

  it('passes anything that is not a block on unchanged, for the engine to refuse', () => {
    for (const v of [undefined, null, 'kvm', [1], { hosts: 'x', images: [1] }]) {
      expect(kvmCompat(v)).toEqual(v);
    }
  });
});

describe("kvm's flavour", () => {
  it('is the original kvm: ARP before the agent, blocking, fail-whole, no quota class, orphans listed', () => {
    expect(flavour).toMatchObject({
      type: 'kvm',
      prefix: 'kvm',
      addressSources: ['arp', 'agent'],
      listOrphanVolumes: true,
    });
    expect(profile).toMatchObject({
      createReturn: 'blocking',
      listPartial: 'fail-whole',
      quota: 'absent',
      ipSource: 'discovered',
      childSpans: 'span-decorator',
      credentials: 'mounted-files',
    });
    expect(flavour.metadata.uri).toBe(METADATA_URI);
  });
});
