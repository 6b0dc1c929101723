/**
 * The seam of the `aws` provider: one signal-taking method per EC2 action
 * it calls, over the few fields it reads, and where it is decorated: the
 * contract's `observeSeam` (a child span and a debug line per call and, for
 * the production seam, the per-call budget of `timeouts`). The production
 * adapter (`adapter.ts`) implements it with `@aws-sdk/client-ec2`; tests
 * may wrap it.
 *
 * @module
 */
import { observeSeam, type Telemetry } from '@proxy-op/contract';
import { errorFields } from './errors.js';

/** One DescribeInstances or DescribeSecurityGroups filter: a name and the values it accepts. */
export interface Ec2Filter {
  readonly name: string;
  readonly values: readonly string[];
}

/** An instance as the provider reads it. */
export interface InstanceView {
  readonly instanceId: string;
  /** `pending`, `running`, `shutting-down`, `terminated`, `stopping`, `stopped` (or another). */
  readonly state: string;
  /** The code of `StateReason` (`Server.SpotInstanceTermination`), when EC2 gives one. */
  readonly stateReason: string | undefined;
  /** The message of `StateReason`. */
  readonly stateReasonMessage: string | undefined;
  readonly tags: Readonly<Record<string, string>>;
  /** The availability zone. */
  readonly zone: string;
  readonly launchTime: Date;
  /** The client token it was launched with (empty when none). */
  readonly clientToken: string;
  readonly publicIp: string | undefined;
  readonly privateIp: string | undefined;
  readonly ipv6: string | undefined;
  /** Whether it is a Spot Instance. */
  readonly spot: boolean;
}

/** One ingress rule: TCP (or another protocol) on a port range from one CIDR. */
export interface RuleView {
  readonly protocol: string;
  readonly fromPort: number;
  readonly toPort: number;
  readonly cidr: string;
}

/** A security group as the provider reads it. */
export interface GroupView {
  readonly groupId: string;
  readonly groupName: string;
  readonly vpcId: string;
  readonly tags: Readonly<Record<string, string>>;
  readonly ingress: readonly RuleView[];
}

/** A subnet as the Checker reads it. */
export interface SubnetView {
  readonly subnetId: string;
  readonly zone: string;
  readonly vpcId: string;
}

/** What a launch asks for (RunInstances, one instance). */
export interface RunSpec {
  /** The instance's name (its `Name` tag): for spans and logs. */
  readonly name: string;
  readonly imageId: string;
  readonly instanceType: string;
  readonly subnetId: string;
  readonly groupIds: readonly string[];
  readonly associatePublicIp: boolean;
  readonly ipv6: boolean;
  /** The cloud-init document, base64: never logged. */
  readonly userData: string;
  readonly clientToken: string;
  /** The tags of the instance, its volume, its network interface (and its Spot request). */
  readonly tags: Readonly<Record<string, string>>;
  /** Set for a Spot Instance: its maximum price (unset: the On-Demand price). */
  readonly spot: { readonly maxPrice?: string | undefined } | undefined;
}

/** What a security group is made with. */
export interface GroupSpec {
  readonly groupName: string;
  readonly description: string;
  readonly vpcId: string;
  readonly tags: Readonly<Record<string, string>>;
}

/** A call the Checker makes with `DryRun`: the permission is what it learns. */
export type DryRunCall =
  | { readonly action: 'RunInstances'; readonly spec: RunSpec }
  | { readonly action: 'CreateSecurityGroup'; readonly spec: GroupSpec }
  | { readonly action: 'DescribeInstances' };

/** The EC2 calls of the `aws` provider. Every method takes a signal. */
export interface Ec2Seam {
  /** DescribeInstances by filters (every page) or by IDs (one call; a missing ID is InvalidInstanceID.NotFound). */
  describeInstances(
    query: { readonly filters: readonly Ec2Filter[] } | { readonly instanceIds: readonly string[] },
    signal?: AbortSignal,
  ): Promise<InstanceView[]>;
  /** RunInstances of one instance: the instance EC2 answers with (a repeated client token: the first one's). */
  runInstance(spec: RunSpec, signal?: AbortSignal): Promise<InstanceView>;
  /** TerminateInstances. */
  terminateInstances(instanceIds: readonly string[], signal?: AbortSignal): Promise<void>;
  /** CreateTags on instances or security groups. */
  createTags(
    resourceIds: readonly string[],
    tags: Readonly<Record<string, string>>,
    signal?: AbortSignal,
  ): Promise<void>;
  /** DescribeSecurityGroups by filters, every page. */
  describeSecurityGroups(filters: readonly Ec2Filter[], signal?: AbortSignal): Promise<GroupView[]>;
  /** CreateSecurityGroup, tagged in the same call: the new group's ID. */
  createSecurityGroup(spec: GroupSpec, signal?: AbortSignal): Promise<string>;
  /** AuthorizeSecurityGroupIngress. */
  authorizeIngress(
    groupId: string,
    rules: readonly RuleView[],
    signal?: AbortSignal,
  ): Promise<void>;
  /** RevokeSecurityGroupIngress. */
  revokeIngress(groupId: string, rules: readonly RuleView[], signal?: AbortSignal): Promise<void>;
  /** DeleteSecurityGroup. */
  deleteSecurityGroup(groupId: string, signal?: AbortSignal): Promise<void>;
  /** DescribeImages of these AMIs: the IDs found (a missing one is InvalidAMIID.NotFound). */
  describeImages(imageIds: readonly string[], signal?: AbortSignal): Promise<string[]>;
  /** DescribeSubnets of these subnets (a missing one is InvalidSubnetID.NotFound). */
  describeSubnets(subnetIds: readonly string[], signal?: AbortSignal): Promise<SubnetView[]>;
  /** DescribeInstanceTypes of these types: the types found (an unknown one is InvalidInstanceType). */
  describeInstanceTypes(types: readonly string[], signal?: AbortSignal): Promise<string[]>;
  /** A call with `DryRun`: resolves when EC2 answers DryRunOperation (allowed), rejects with what it answered otherwise. */
  dryRun(call: DryRunCall, signal?: AbortSignal): Promise<void>;
}

/** The name of one of the seam's calls. */
export type SeamCall = (typeof SEAM_CALLS)[number];

/** The names of the seam's calls, in a fixed order. */
export const SEAM_CALLS = [
  'describeInstances',
  'runInstance',
  'terminateInstances',
  'createTags',
  'describeSecurityGroups',
  'createSecurityGroup',
  'authorizeIngress',
  'revokeIngress',
  'deleteSecurityGroup',
  'describeImages',
  'describeSubnets',
  'describeInstanceTypes',
  'dryRun',
] as const satisfies readonly (keyof Ec2Seam)[];

/** The calls that change something: their budget is `timeouts.writeMs`; every other call reads. */
const WRITES: ReadonlySet<string> = new Set<SeamCall>([
  'runInstance',
  'terminateInstances',
  'createTags',
  'createSecurityGroup',
  'authorizeIngress',
  'revokeIngress',
  'deleteSecurityGroup',
]);

/** The budget of one call in ms: `writeMs` for a call that changes something, `readMs` for the rest. */
export function callBudget(
  timeouts: { readonly readMs: number; readonly writeMs: number },
  method: string,
): number {
  return WRITES.has(method) ? timeouts.writeMs : timeouts.readMs;
}

/** Safe identifiers of a seam call, for its span and log line (never user data or tags' values but the name). */
export function seamFields(method: string, args: readonly unknown[]): Record<string, string> {
  const [a] = args;
  const o = (typeof a === 'object' && a !== null ? a : {}) as Record<string, unknown>;
  switch (method) {
    case 'describeInstances': {
      if (Array.isArray(o.instanceIds)) return { instanceIds: o.instanceIds.join(',') };
      const filters = Array.isArray(o.filters) ? (o.filters as Ec2Filter[]) : [];
      const name = filters.find((f) => f.name === 'tag:Name')?.values[0];
      return name === undefined ? {} : { name };
    }
    case 'runInstance':
      return { name: String(o.name), clientToken: String(o.clientToken) };
    case 'terminateInstances':
    case 'createTags':
      return { resourceIds: Array.isArray(a) ? a.join(',') : '' };
    case 'createSecurityGroup':
      return { groupName: String(o.groupName) };
    case 'authorizeIngress':
    case 'revokeIngress':
    case 'deleteSecurityGroup':
      return { groupId: String(a) };
    case 'describeSecurityGroups': {
      const filters = Array.isArray(a) ? (a as Ec2Filter[]) : [];
      const name = filters.find((f) => f.name === 'group-name')?.values[0];
      return name === undefined ? {} : { groupName: name };
    }
    case 'dryRun':
      return { action: String(o.action) };
    default:
      return {};
  }
}

/** What {@link decorateSeam} takes besides the seam. */
export interface DecorateOptions extends Pick<Telemetry, 'tracer' | 'logger'> {
  /** The configured provider name. */
  readonly provider: string;
  /** The config's budgets. */
  readonly timeouts: { readonly readMs: number; readonly writeMs: number };
  /**
   * Whether each call gets its budget ({@link callBudget}): true for the
   * production seam; a seam from the deps is bounded by the caller's signal only.
   */
  readonly budgeted: boolean;
}

/**
 * The seam the operations use: `seam` under `observeSeam` (an `aws.<call>`
 * child span and an `aws call` debug line per call, with its
 * {@link seamFields} and, on failure, its `errorFields`; with `budgeted`,
 * the per-call budget: the call gets the caller's signal joined with its
 * budget and, past it, rejects with the contract's `BudgetError`).
 */
export function decorateSeam(seam: Ec2Seam, o: DecorateOptions): Ec2Seam {
  return observeSeam(seam, {
    prefix: 'aws',
    provider: o.provider,
    tracer: o.tracer,
    logger: o.logger,
    fields: seamFields,
    errorFields,
    budget: o.budgeted ? (method) => callBudget(o.timeouts, method) : undefined,
  });
}
