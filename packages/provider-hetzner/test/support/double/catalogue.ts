// Test support (not a test file): what the Hetzner Cloud API double offers before anything is
// made: locations, datacenters, server types and images, in the API's JSON shapes (field names
// and nesting as the API documents them and hcloud-go reads them). The locations are the real
// ones with their countries and network zones; which server type is offered where is a small
// model of the real offer (cost-optimised and Arm types in the EU locations only, the others
// everywhere); IDs, descriptions and prices are the double's own.

export type Json = Record<string, unknown>;

/** A location as the API answers it. */
export interface LocationRec {
  readonly id: number;
  readonly name: string;
  readonly description: string;
  readonly country: string;
  readonly city: string;
  readonly latitude: number;
  readonly longitude: number;
  readonly network_zone: string;
}

export const LOCATIONS: readonly LocationRec[] = [
  {
    id: 1,
    name: 'fsn1',
    description: 'Falkenstein DC Park 1',
    country: 'DE',
    city: 'Falkenstein',
    latitude: 50.47612,
    longitude: 12.370071,
    network_zone: 'eu-central',
  },
  {
    id: 2,
    name: 'nbg1',
    description: 'Nuremberg DC Park 1',
    country: 'DE',
    city: 'Nuremberg',
    latitude: 49.452102,
    longitude: 11.076665,
    network_zone: 'eu-central',
  },
  {
    id: 3,
    name: 'hel1',
    description: 'Helsinki DC Park 1',
    country: 'FI',
    city: 'Helsinki',
    latitude: 60.169855,
    longitude: 24.938379,
    network_zone: 'eu-central',
  },
  {
    id: 4,
    name: 'ash',
    description: 'Ashburn, VA',
    country: 'US',
    city: 'Ashburn, VA',
    latitude: 39.043757,
    longitude: -77.487442,
    network_zone: 'us-east',
  },
  {
    id: 5,
    name: 'hil',
    description: 'Hillsboro, OR',
    country: 'US',
    city: 'Hillsboro, OR',
    latitude: 45.54222,
    longitude: -122.951924,
    network_zone: 'us-west',
  },
  {
    id: 6,
    name: 'sin',
    description: 'Singapore',
    country: 'SG',
    city: 'Singapore',
    latitude: 1.283333,
    longitude: 103.833333,
    network_zone: 'ap-southeast',
  },
];

/** The datacenter of each location (one each here): `<location>-dc<n>`. */
export const DATACENTERS: readonly { id: number; name: string; location: string }[] = [
  { id: 4, name: 'fsn1-dc14', location: 'fsn1' },
  { id: 2, name: 'nbg1-dc3', location: 'nbg1' },
  { id: 3, name: 'hel1-dc2', location: 'hel1' },
  { id: 5, name: 'ash-dc1', location: 'ash' },
  { id: 6, name: 'hil-dc1', location: 'hil' },
  { id: 7, name: 'sin-dc1', location: 'sin' },
];

const EU = ['fsn1', 'nbg1', 'hel1'];
const ALL = LOCATIONS.map((l) => l.name);

/** A server type: its sizes, architecture and the locations it is offered in. */
export interface ServerTypeRec {
  readonly id: number;
  readonly name: string;
  readonly description: string;
  readonly cores: number;
  readonly memory: number;
  readonly disk: number;
  readonly cpu_type: 'shared' | 'dedicated';
  readonly architecture: 'x86' | 'arm';
  readonly category: string;
  /** Where it is offered (a harness may take locations away). */
  locations: string[];
}

export function serverTypes(): ServerTypeRec[] {
  const t = (
    id: number,
    name: string,
    cores: number,
    memory: number,
    disk: number,
    cpu: 'shared' | 'dedicated',
    arch: 'x86' | 'arm',
    category: string,
    where: string[],
  ): ServerTypeRec => ({
    id,
    name,
    description: name.toUpperCase(),
    cores,
    memory,
    disk,
    cpu_type: cpu,
    architecture: arch,
    category,
    locations: [...where],
  });
  return [
    t(104, 'cx23', 2, 4, 40, 'shared', 'x86', 'cost_optimized', EU),
    t(105, 'cx33', 4, 8, 80, 'shared', 'x86', 'cost_optimized', EU),
    t(22, 'cpx11', 2, 2, 40, 'shared', 'x86', 'regular_purpose', ALL),
    t(23, 'cpx21', 3, 4, 80, 'shared', 'x86', 'regular_purpose', ALL),
    t(45, 'cax11', 2, 4, 40, 'shared', 'arm', 'cost_optimized', EU),
    t(96, 'ccx13', 2, 8, 80, 'dedicated', 'x86', 'general_purpose', ALL),
  ];
}

/** An image of the catalogue. */
export interface ImageRec {
  readonly id: number;
  readonly name: string;
  readonly description: string;
  readonly os_flavor: string;
  readonly os_version: string;
  readonly architecture: 'x86' | 'arm';
  /** `available`, or `unavailable` (a harness may withdraw one). */
  status: string;
}

export function images(): ImageRec[] {
  const i = (
    id: number,
    name: string,
    description: string,
    flavor: string,
    version: string,
    arch: 'x86' | 'arm',
  ): ImageRec => ({
    id,
    name,
    description,
    os_flavor: flavor,
    os_version: version,
    architecture: arch,
    status: 'available',
  });
  return [
    i(161547269, 'ubuntu-24.04', 'Ubuntu 24.04', 'ubuntu', '24.04', 'x86'),
    i(161547270, 'ubuntu-24.04', 'Ubuntu 24.04', 'ubuntu', '24.04', 'arm'),
    i(114690387, 'debian-12', 'Debian 12', 'debian', '12', 'x86'),
    i(114690389, 'debian-12', 'Debian 12', 'debian', '12', 'arm'),
  ];
}

export function locationJson(l: LocationRec): Json {
  return { ...l };
}

export function serverTypeJson(t: ServerTypeRec): Json {
  return {
    id: t.id,
    name: t.name,
    description: t.description,
    category: t.category,
    cores: t.cores,
    memory: t.memory,
    disk: t.disk,
    deprecated: false,
    deprecation: null,
    prices: t.locations.map((l) => ({
      location: l,
      price_hourly: { net: '0.0100000000', gross: '0.0119000000000000' },
      price_monthly: { net: '5.0000000000', gross: '5.9500000000000000' },
      included_traffic: 21990232555520,
      price_per_tb_traffic: { net: '1.0000000000', gross: '1.1900000000000000' },
    })),
    storage_type: 'local',
    cpu_type: t.cpu_type,
    architecture: t.architecture,
    included_traffic: 0,
    locations: t.locations.map((name) => ({
      id: LOCATIONS.find((l) => l.name === name)?.id ?? 0,
      name,
      deprecation: null,
    })),
  };
}

export function imageJson(i: ImageRec): Json {
  return {
    id: i.id,
    type: 'system',
    status: i.status,
    name: i.name,
    description: i.description,
    image_size: null,
    disk_size: 5,
    created: '2024-04-25T13:00:00+00:00',
    created_from: null,
    bound_to: null,
    os_flavor: i.os_flavor,
    os_version: i.os_version,
    rapid_deploy: true,
    protection: { delete: false },
    deprecated: null,
    deleted: null,
    labels: {},
    architecture: i.architecture,
  };
}

export function datacenterJson(name: string, types: readonly ServerTypeRec[]): Json {
  const dc = DATACENTERS.find((d) => d.name === name);
  if (dc === undefined) throw new Error(`double: no datacenter ${name}`);
  const location = LOCATIONS.find((l) => l.name === dc.location) as LocationRec;
  const here = types.filter((t) => t.locations.includes(dc.location)).map((t) => t.id);
  return {
    id: dc.id,
    name: dc.name,
    description: `${location.city} DC ${dc.name.replace(/^.*-dc/, '')}`,
    location: locationJson(location),
    server_types: { supported: here, available: here, available_for_migration: here },
  };
}
