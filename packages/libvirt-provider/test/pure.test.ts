// Peer: none; the engine's pure pieces (config, marks, XML, states, addresses, flavours).
import { ConfigError, formatConfigIssues, validateConfig } from '@proxy-op/contract';
import { describe, expect, it } from 'vitest';
import { firstIPv4 } from '../src/address.js';
import { formatLibvirtVersion } from '../src/check.js';
import {
  CONFIG_DEFAULTS,
  type LibvirtConfig,
  libvirtConfigSchema,
  validateLibvirtConfig,
} from '../src/config.js';
import { MarkFormatError } from '../src/errors.js';
import { escapeXml, markElement } from '../src/flavour.js';
import { domainIds } from '../src/id.js';
import { flavourProblems, libvirtProviderModule } from '../src/module.js';
import { imageName, markerName } from '../src/runtime.js';
import { mapState } from '../src/state.js';
import { domainXml, overlayXml, readVolumeXml, volumeXml } from '../src/xml.js';
import { testFlavour } from './support/flavours.js';

const SHA = 'ab'.repeat(32);
const valid = {
  hosts: [{ name: 'kvm1', address: '192.0.2.10', user: 'proxyop' }],
  images: { debian: { url: 'https://images.example/debian.qcow2', sha256: SHA.toUpperCase() } },
  machineTypes: { small: { vcpus: 1, memoryMiB: 512 } },
};

describe('config', () => {
  it('fills every default in one place', () => {
    const r = validateLibvirtConfig(valid);
    expect(r.issues).toBeUndefined();
    expect((r as { value: unknown }).value).toEqual({
      hosts: [
        {
          name: 'kvm1',
          address: '192.0.2.10',
          port: 22,
          user: 'proxyop',
          socket: '/var/run/libvirt/libvirt-sock',
          pool: 'default',
          uri: 'qemu:///system',
          domainType: 'kvm',
        },
      ],
      sshKeyFile: CONFIG_DEFAULTS.sshKeyFile,
      knownHostsFile: CONFIG_DEFAULTS.knownHostsFile,
      insecureIgnoreHostKey: false,
      diskSizeGb: 10,
      installGuestAgent: true,
      consoleLog: true,
      images: {
        debian: {
          url: 'https://images.example/debian.qcow2',
          sha256: SHA,
          format: 'qcow2',
          firmware: 'bios',
        },
      },
      machineTypes: { small: { vcpus: 1, memoryMiB: 512 } },
    });
  });

  it('reports every problem at once, each with its path', async () => {
    const bad = {
      hosts: [
        {
          name: 'KVM_1',
          address: 'a b',
          user: 'proxyop',
          port: 0,
          bridge: 'a-bridge-name-too-long',
          extra: 1,
        },
        { name: 'kvm2', address: 'h', user: 'proxyop', uri: 'not a uri', domainType: 'xen' },
        { name: 'kvm2', address: 'h2', user: 'proxyop' },
        { name: 'kvm3', address: 'h3', user: 'proxyop', region: 'rack 1', country: 'de' },
      ],
      knownHostsFile: '/k',
      insecureIgnoreHostKey: true,
      diskSizeGb: 0,
      images: { 'bad key!': { url: 'ftp://x/y', sha256: 'nope', format: 'vmdk' } },
      machineTypes: { small: { vcpus: 0 } },
      surprise: true,
    };
    const err = await validateConfig(libvirtConfigSchema('@proxy-op/test'), bad, 'kvm2').catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([
      'kvm2.surprise: is not a known field',
      'kvm2.hosts[0].extra: is not a known field',
      'kvm2.hosts[0].name: "KVM_1" is not a host name (a lowercase DNS label: a-z, 0-9 and "-")',
      'kvm2.hosts[0].address: "a b" is not a host name or IP address',
      'kvm2.hosts[0].port: must be an integer from 1 to 65535',
      'kvm2.hosts[0].bridge: "a-bridge-name-too-long" is not a bridge interface name',
      'kvm2.hosts[1].uri: "not a uri" is not a libvirt URI',
      'kvm2.hosts[1].domainType: must be one of kvm, qemu',
      'kvm2.hosts[2].name: "kvm2" is listed twice',
      'kvm2.hosts[3].region: "rack 1" is not a region name (letters, digits, ".", "_", ":", "/", "-"; at most 128)',
      'kvm2.hosts[3].country: "de" is not an upper-case ISO 3166-1 alpha-2 country code (DE, US)',
      'kvm2.knownHostsFile: cannot be combined with insecureIgnoreHostKey: choose one',
      'kvm2.diskSizeGb: must be an integer from 1 to 65536',
      'kvm2.images.bad key!: is not a valid catalogue key (letters, digits, ".", "_", "-"; at most 63)',
      'kvm2.images.bad key!.url: must be an http or https URL',
      'kvm2.images.bad key!.sha256: "nope" is not a SHA-256 in hex (64 digits)',
      'kvm2.images.bad key!.format: must be one of qcow2, raw',
      'kvm2.machineTypes.small.vcpus: must be an integer from 1 to 1024',
      'kvm2.machineTypes.small.memoryMiB: is required',
    ]);
  });

  it("takes a host's region and country as given, and leaves them out when unset", () => {
    const r = validateLibvirtConfig({
      ...valid,
      hosts: [
        { name: 'kvm1', address: '192.0.2.10', user: 'proxyop', region: 'fra-dc2', country: 'DE' },
        { name: 'kvm2', address: '192.0.2.11', user: 'proxyop' },
      ],
    });
    expect(r.issues).toBeUndefined();
    const hosts = (r as { value: LibvirtConfig }).value.hosts;
    expect(hosts[0]).toMatchObject({ name: 'kvm1', region: 'fra-dc2', country: 'DE' });
    expect(hosts[1]).not.toHaveProperty('region');
    expect(hosts[1]).not.toHaveProperty('country');
  });

  it('needs hosts and catalogues, and refuses credentials in image URLs', () => {
    const r = validateLibvirtConfig({
      hosts: [],
      images: { x: { url: 'https://u:p@h/i', sha256: SHA } },
    });
    expect(formatConfigIssues(r.issues ?? [])).toEqual([
      'hosts: must list at least one host',
      'images.x.url: must not carry credentials',
      'machineTypes: must map at least one machine type key to { vcpus, memoryMiB }',
    ]);
  });

  it('runs the flavour compatibility layer first', () => {
    const schema = libvirtConfigSchema('@proxy-op/test', (b) => {
      const { hostList, ...rest } = b as { hostList: unknown };
      return { ...rest, hosts: hostList };
    });
    const r = schema['~standard'].validate({ ...valid, hosts: undefined, hostList: valid.hosts });
    expect((r as { value?: { hosts: unknown[] } }).value?.hosts).toHaveLength(1);
  });
});

describe('the mark element', () => {
  const ns = markElement({
    uri: 'https://proxy-op.dev/xmlns/t/1',
    prefix: 't',
    element: 'instance',
  });
  const mark = {
    uid: 'a&b<c>"d\'e',
    createdAt: new Date('2026-03-04T05:06:07Z'),
    installation: 'inst-1',
  };

  it('is written in its namespace with every key escaped, and read back as libvirt returns it', () => {
    const xml = ns.format(mark);
    expect(xml).toBe(
      '<t:instance xmlns:t="https://proxy-op.dev/xmlns/t/1" proxy-operator-managed="true" proxy-operator-uid="a&amp;b&lt;c&gt;&quot;d&apos;e" proxy-operator-created-at="2026-03-04T05:06:07Z" proxy-operator-installation="inst-1"/>',
    );
    // libvirt hands the element back without its prefix, attributes re-quoted by libxml2.
    const back = `<instance proxy-operator-managed="true" proxy-operator-uid="a&amp;b&lt;c&gt;&quot;d'e" proxy-operator-created-at="2026-03-04T05:06:07Z" proxy-operator-installation="inst-1"/>`;
    expect(ns.parse(back)).toEqual(mark);
  });

  it('reads an old mark without installation as the default installation, and an unmanaged one as none', () => {
    expect(ns.parse('<instance proxy-operator-managed="true" proxy-operator-uid="u"/>')).toEqual({
      uid: 'u',
      createdAt: new Date(0),
      installation: 'default',
    });
    expect(
      ns.parse('<instance proxy-operator-managed="false" proxy-operator-uid="u"/>'),
    ).toBeUndefined();
  });

  it('refuses another element', () => {
    expect(() => ns.parse('<owner uid="u"/>')).toThrow(MarkFormatError);
    expect(() => ns.parse('not xml')).toThrow(MarkFormatError);
  });
});

describe('IDs and names', () => {
  it('parses hosts/<host>/domains/<name> strictly', () => {
    expect(domainIds.parse('hosts/kvm1/domains/proxy-a')).toEqual({
      host: 'kvm1',
      name: 'proxy-a',
    });
    for (const bad of [
      'hosts/kvm1/domains/',
      'hosts/KVM1/domains/a',
      'hosts/kvm1/domain/a',
      'hosts/kvm1/domains/a/b',
      'hosts/k_1/domains/a',
    ]) {
      expect(domainIds.parse(bad), bad).toBeUndefined();
    }
  });

  it('names cached images by key and SHA-256, and their markers by the whole SHA-256', () => {
    const image = {
      url: 'https://x/y',
      sha256: SHA,
      format: 'qcow2' as const,
      firmware: 'bios' as const,
    };
    expect(imageName('debian', image)).toBe(`proxy-op-image-debian-${SHA.slice(0, 16)}.qcow2`);
    expect(markerName('debian', image)).toBe(
      `proxy-op-image-debian-${SHA.slice(0, 16)}.qcow2.sha256-${SHA}`,
    );
  });
});

describe('XML', () => {
  it('builds a domain with the overlay, the seed, the agent channel, the console log and the mark', () => {
    const xml = domainXml({
      name: 'proxy-a',
      domainType: 'kvm',
      vcpus: 2,
      memoryMiB: 1024,
      firmware: 'bios',
      metadata: '<t:instance xmlns:t="urn:t" proxy-operator-managed="true"/>',
      overlayPath: '/pool/proxy-a.qcow2',
      seedPath: '/pool/proxy-a-seed.iso',
      bridge: 'br0',
      consoleLog: true,
    });
    expect(xml).toContain('<domain type="kvm">');
    expect(xml).toContain(
      '<metadata><t:instance xmlns:t="urn:t" proxy-operator-managed="true"/></metadata>',
    );
    expect(xml).toContain('<type arch="x86_64" machine="pc">hvm</type>');
    expect(xml).toContain('<source file="/pool/proxy-a.qcow2"/><target dev="vda" bus="virtio"/>');
    expect(xml).toContain(
      '<source file="/pool/proxy-a-seed.iso"/><target dev="hdc" bus="ide"/><readonly/>',
    );
    expect(xml).toContain(
      '<interface type="bridge"><source bridge="br0"/><model type="virtio"/></interface>',
    );
    expect(xml).toContain('<target type="virtio" name="org.qemu.guest_agent.0"/>');
    expect(xml).toContain('<log file="/var/log/libvirt/qemu/proxy-a-console.log" append="off"/>');
  });

  it('boots UEFI images on q35 with the seed on SATA, and uses user networking without a bridge', () => {
    const xml = domainXml({
      name: 'p',
      domainType: 'qemu',
      vcpus: 1,
      memoryMiB: 256,
      firmware: 'uefi',
      metadata: '',
      overlayPath: '/o',
      seedPath: '/s',
      consoleLog: false,
    });
    expect(xml).toContain('<os firmware="efi"><type arch="x86_64" machine="q35">hvm</type>');
    expect(xml).toContain('<target dev="sda" bus="sata"/>');
    expect(xml).toContain('<interface type="user">');
    expect(xml).not.toContain('<log ');
  });

  it('escapes every value it writes', () => {
    expect(volumeXml('a&b', 1)).toContain('<name>a&amp;b</name>');
    expect(overlayXml('o', 5, '/p/<x>', 'raw')).toContain('<path>/p/&lt;x&gt;</path>');
    expect(escapeXml(`<&>"'`)).toBe('&lt;&amp;&gt;&quot;&apos;');
  });

  it('reads capacity and backing file as libvirt writes them', () => {
    const xml =
      "<volume type='file'>\n  <name>o</name>\n  <capacity unit='bytes'>2147483648</capacity>\n  <target>\n    <path>/p/o</path>\n  </target>\n  <backingStore>\n    <path>/p/base&amp;1.qcow2</path>\n    <format type='qcow2'/>\n  </backingStore>\n</volume>\n";
    expect(readVolumeXml(xml)).toEqual({ capacity: 2147483648, backingPath: '/p/base&1.qcow2' });
    expect(readVolumeXml("<volume><capacity unit='bytes'>5</capacity></volume>")).toEqual({
      capacity: 5,
      backingPath: undefined,
    });
  });
});

describe('states and addresses', () => {
  it('maps libvirt states to the contract', () => {
    const rows: [number, number, string | undefined, string][] = [
      [0, 0, undefined, 'Provisioning'],
      [1, 1, undefined, 'Provisioning'],
      [1, 1, '10.0.0.5', 'Running'],
      [2, 0, '10.0.0.5', 'Running'],
      [3, 1, '10.0.0.5', 'Stopped'],
      [3, 11, undefined, 'Provisioning'],
      [4, 1, undefined, 'Stopped'],
      [5, 0, undefined, 'Provisioning'],
      [5, 6, undefined, 'Provisioning'],
      [5, 1, undefined, 'Stopped'],
      [5, 2, undefined, 'Stopped'],
      [6, 1, undefined, 'Stopped'],
      [7, 0, undefined, 'Stopped'],
      [8, 0, '10.0.0.5', 'Stopped'],
    ];
    for (const [state, reason, ip, want] of rows)
      expect(mapState(state, reason, ip), `${state}/${reason}/${ip}`).toBe(want);
  });

  it('takes the first routable IPv4, in the source order', () => {
    const iface = (name: string, ...addrs: [number, string][]) => ({
      name,
      hwaddr: undefined,
      addrs: addrs.map(([type, addr]) => ({ type, addr, prefix: 24 })),
    });
    expect(
      firstIPv4([
        iface('lo', [0, '127.0.0.1']),
        iface('eth0', [1, 'fe80::1'], [0, '169.254.3.4'], [0, 'fe80::2'], [0, '0.0.0.0']),
        iface('eth1', [0, '192.168.7.8'], [0, '10.1.1.1']),
      ]),
    ).toBe('192.168.7.8');
    expect(firstIPv4([iface('eth0', [1, '2001:db8::1'])])).toBeUndefined();
  });

  it('formats libvirt versions', () => {
    expect(formatLibvirtVersion(9_000_000)).toBe('9.0.0');
    expect(formatLibvirtVersion(10_010_002)).toBe('10.10.2');
  });
});

describe('flavours', () => {
  it('accepts what the engine can do and names what it cannot', () => {
    expect(flavourProblems(testFlavour)).toEqual([]);
    const wrong = {
      ...testFlavour,
      type: 'Bad Type',
      addressSources: ['agent', 'agent'] as const,
      profile: {
        ...testFlavour.profile,
        deleteReturn: 'returns-early' as const,
        asyncOps: ['task-handle' as const],
        preemption: 'possible' as const,
        ipv6Egress: 'range' as const,
      },
    };
    expect(flavourProblems(wrong)).toEqual([
      'profile.deleteReturn: the libvirt engine does waits, not returns-early',
      'profile.asyncOps: the libvirt engine has none',
      'profile.preemption: the libvirt engine does never, not possible',
      'profile.ipv6Egress: the libvirt engine does none, not range',
      'type "Bad Type" is not a lowercase name',
      'addressSources: a source is listed twice',
    ]);
    expect(() => libvirtProviderModule(wrong)).toThrow(TypeError);
  });
});
