/**
 * Pure builders: the insert body of an instance and of its firewall rule,
 * and the rule's name and mark.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { type Mark, MarkKey, parseMark } from '@proxy-op/contract';
import { type GcpConfig, NAME_RE, regionOf } from './config.js';
import type { GcpId } from './id.js';
import { markLabels } from './labels.js';
import { type FirewallBody, type InstanceBody, USER_DATA_KEY } from './seam.js';

/** What the insert body is built from: the checked request, resolved. */
export interface InsertInputs {
  readonly id: GcpId;
  readonly uid: string;
  readonly installation: string;
  /** The machine type name (`e2-small`). */
  readonly machineType: string;
  /** The image path from the catalogue. */
  readonly image: string;
  /** The cloud-init document, as text. */
  readonly userData: string;
  /** The per-instance tag of the firewall rule, when the rule is on. */
  readonly firewallTag?: string | undefined;
}

function networkPath(config: GcpConfig): string {
  return NAME_RE.test(config.network)
    ? `projects/${config.project}/global/networks/${config.network}`
    : config.network;
}

function subnetworkPath(config: GcpConfig, zone: string): string | undefined {
  const s = config.subnetwork;
  if (s === undefined) return undefined;
  return NAME_RE.test(s)
    ? `projects/${config.project}/regions/${regionOf(zone)}/subnetworks/${s}`
    : s;
}

/**
 * The instance resource to insert: one interface (with an ephemeral
 * external address unless `addressMode` is `internal`), one boot disk from
 * the image that goes with the instance (`autoDelete`), the mark as labels
 * on the instance and its disk, the network tag (and the rule's tag), the
 * cloud-init document as `user-data` metadata, and Spot scheduling when
 * configured.
 */
export function buildInsertBody(config: GcpConfig, x: InsertInputs): InstanceBody {
  const labels = markLabels({ uid: x.uid, installation: x.installation });
  const subnetwork = subnetworkPath(config, x.id.zone);
  const nic: InstanceBody['networkInterfaces'][number] = {
    network: networkPath(config),
    ...(subnetwork === undefined ? {} : { subnetwork }),
    ...(config.addressMode === 'external'
      ? { accessConfigs: [{ name: 'External NAT', type: 'ONE_TO_ONE_NAT' as const }] }
      : {}),
  };
  return {
    name: x.id.name,
    machineType: `zones/${x.id.zone}/machineTypes/${x.machineType}`,
    labels,
    tags: {
      items: x.firewallTag === undefined ? [config.networkTag] : [config.networkTag, x.firewallTag],
    },
    metadata: { items: [{ key: USER_DATA_KEY, value: x.userData }] },
    disks: [
      {
        boot: true,
        autoDelete: true,
        initializeParams: {
          sourceImage: x.image,
          diskSizeGb: String(config.diskSizeGb),
          diskType: `zones/${x.id.zone}/diskTypes/${config.diskType}`,
          labels,
        },
      },
    ],
    networkInterfaces: [nic],
    // A Spot instance can neither restart by itself nor live-migrate.
    ...(config.scheduling.provisioningModel === 'SPOT'
      ? {
          scheduling: {
            provisioningModel: 'SPOT' as const,
            instanceTerminationAction: config.scheduling.instanceTerminationAction,
            automaticRestart: false as const,
            onHostMaintenance: 'TERMINATE' as const,
          },
        }
      : {}),
  };
}

/**
 * The name of an instance's firewall rule, which is also the network tag
 * the rule targets: `proxy-op-` and 16 hex digits of a hash of the zone and
 * name (rules are per project, instance names per zone).
 */
export function firewallName(id: GcpId): string {
  const h = createHash('sha256').update(`${id.zone}/${id.name}`).digest('hex').slice(0, 16);
  return `proxy-op-${h}`;
}

/** The rule's description: which instance it serves, and the mark (rules carry no labels). */
export function firewallDescription(
  id: GcpId,
  owner: { uid: string; installation: string },
): string {
  return [
    `proxy-op rule for zones/${id.zone}/instances/${id.name}:`,
    `${MarkKey.Managed}=true`,
    `${MarkKey.Uid}=${owner.uid}`,
    `${MarkKey.Installation}=${owner.installation}`,
  ].join(' ');
}

/** The mark in a rule's description, or undefined when it carries none. */
export function firewallMark(description: string): Mark | undefined {
  const kv: Record<string, string> = {};
  for (const m of description.matchAll(/(proxy-operator-[a-z-]+)=(\S*)/g)) {
    kv[m[1] as string] = m[2] as string;
  }
  return parseMark(kv);
}

/** The rule: TCP to the proxy port, from the allowed sources, to the instance's tag. */
export function buildFirewallBody(
  config: GcpConfig,
  id: GcpId,
  owner: { uid: string; installation: string },
  port: number,
  sourceRanges: readonly string[],
): FirewallBody {
  const name = firewallName(id);
  return {
    name,
    description: firewallDescription(id, owner),
    network: networkPath(config),
    direction: 'INGRESS',
    priority: config.firewall.priority,
    sourceRanges,
    targetTags: [name],
    allowed: [{ IPProtocol: 'tcp', ports: [String(port)] }],
  };
}
