/**
 * The `kubernetes` config block: its type, its defaults and its schema.
 *
 * @module
 */
import type { ConfigIssue, ConfigResult, ConfigSchema, ProviderDeps } from '@proxy-op/contract';
import { cidrProblem } from '@proxy-op/contract';

/** A Squid image of the catalogue, named by a key that `placement.image` picks. */
export interface ImageEntry {
  /** The image reference, `registry/repository:tag` or `...@sha256:...`. */
  readonly image: string;
  /** Squid's path inside the image. Default `/usr/sbin/squid`. */
  readonly squidPath: string;
  /** The non-root user Squid runs as. Default 65534. */
  readonly runAsUser: number;
  /** The group Squid runs as. Default 65534. */
  readonly runAsGroup: number;
  /** The container's `imagePullPolicy`; Kubernetes' own default when unset. */
  readonly pullPolicy?: 'Always' | 'IfNotPresent' | 'Never' | undefined;
}

/** A machine type of the catalogue: the Squid container's resources. */
export interface MachineTypeEntry {
  /** CPU request, a Kubernetes quantity (`100m`, `1`). */
  readonly cpu: string;
  /** Memory request and limit, a Kubernetes quantity (`128Mi`). */
  readonly memory: string;
  /** CPU limit; none when unset. */
  readonly cpuLimit?: string | undefined;
}

/** The validated `kubernetes` config block, defaults filled in. */
export interface KubernetesConfig {
  /** A kubeconfig file; unset means in-cluster (the Pod's service account). */
  readonly kubeconfig?: string | undefined;
  /** The kubeconfig context; its `current-context` when unset. */
  readonly context?: string | undefined;
  /**
   * A file holding a bearer token, read on every request (a projected
   * service-account token rotates). In-cluster it defaults to the
   * service account's token file; with a kubeconfig it replaces the
   * kubeconfig user's credential.
   */
  readonly tokenFile?: string | undefined;
  /** The one namespace every Pod goes into; unset puts each Pod in its Proxy's namespace. */
  readonly namespace?: string | undefined;
  /** Where the Checker tries a dry-run Pod create when `namespace` is unset. Default `default`. */
  readonly checkNamespace: string;
  /**
   * Whether each Pod gets an OwnerReference to its Proxy, so Kubernetes'
   * garbage collector removes it with the Proxy. Only for an operator whose
   * Proxies live in the cluster the Pods go to (and not with `namespace`).
   */
  readonly ownerReferences: boolean;
  /** CIDRs allowed when a request's cloud-init names none. Default none. */
  readonly allowedSources: readonly string[];
  /** The ports CONNECT may reach. Default `[443]`. */
  readonly connectPorts: readonly number[];
  /** Squid images by catalogue key (`placement.image`). */
  readonly images: Readonly<Record<string, ImageEntry>>;
  /** Resources by catalogue key (`placement.machineType`). */
  readonly machineTypes: Readonly<Record<string, MachineTypeEntry>>;
  /** The zones `placement.zone` may name (node label `topology.kubernetes.io/zone`). */
  readonly zones: readonly string[];
  /** Secrets (in the Pod's namespace) to pull the image with. */
  readonly imagePullSecrets: readonly string[];
  /** One request's budget, answer included, in seconds. Default 30. */
  readonly requestTimeoutSeconds: number;
  /**
   * How long a proxy's Squid trusts a verified credential before it asks
   * its password file again (`credentialsttl`), in whole seconds: a
   * credential taken out of the file works for up to this long. Default 60.
   */
  readonly credentialsTtlSeconds: number;
}

/** What the Kubernetes module takes besides the contract's dependencies: nothing more. */
export type KubernetesDeps = ProviderDeps;

/** The defaults the schema fills in. */
export const CONFIG_DEFAULTS = Object.freeze({
  checkNamespace: 'default',
  ownerReferences: false,
  allowedSources: Object.freeze([] as string[]),
  connectPorts: Object.freeze([443]),
  zones: Object.freeze([] as string[]),
  imagePullSecrets: Object.freeze([] as string[]),
  requestTimeoutSeconds: 30,
  credentialsTtlSeconds: 60,
  squidPath: '/usr/sbin/squid',
  runAsUser: 65534,
  runAsGroup: 65534,
});

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const KEY_RE = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
const QUANTITY = /^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;
const IMAGE_RE = /^[^\s@:/][^\s]*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;

const TOP_KEYS = new Set([
  'kubeconfig',
  'context',
  'tokenFile',
  'namespace',
  'checkNamespace',
  'ownerReferences',
  'allowedSources',
  'connectPorts',
  'images',
  'machineTypes',
  'zones',
  'imagePullSecrets',
  'requestTimeoutSeconds',
  'credentialsTtlSeconds',
]);
const IMAGE_KEYS = new Set(['image', 'squidPath', 'runAsUser', 'runAsGroup', 'pullPolicy']);
const MACHINE_KEYS = new Set(['cpu', 'memory', 'cpuLimit']);

type Path = (string | number)[];

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Validates and fills the block; every problem is collected with its path. */
function validate(input: unknown): ConfigResult<KubernetesConfig> {
  const issues: ConfigIssue[] = [];
  const bad = (path: Path, message: string) => issues.push({ path, message });
  if (!isObject(input)) {
    return { issues: [{ message: 'must be an object with at least images and machineTypes' }] };
  }
  for (const k of Object.keys(input)) {
    if (!TOP_KEYS.has(k)) bad([k], `unknown field; expected one of ${[...TOP_KEYS].join(', ')}`);
  }
  const optString = (key: string, re?: RegExp, what?: string): string | undefined => {
    const v = input[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v === '') {
      bad([key], 'must be a non-empty string');
      return undefined;
    }
    if (re !== undefined && !re.test(v)) {
      bad([key], `"${v}" is not ${what}`);
      return undefined;
    }
    return v;
  };
  const kubeconfig = optString('kubeconfig');
  const context = optString('context');
  const tokenFile = optString('tokenFile');
  const namespace = optString('namespace', DNS_LABEL, 'a namespace name (a lowercase DNS label)');
  const checkNamespace =
    optString('checkNamespace', DNS_LABEL, 'a namespace name (a lowercase DNS label)') ??
    CONFIG_DEFAULTS.checkNamespace;
  if (context !== undefined && kubeconfig === undefined) {
    bad(['context'], 'needs kubeconfig (in-cluster there is one context)');
  }

  let ownerReferences: boolean = CONFIG_DEFAULTS.ownerReferences;
  if (input.ownerReferences !== undefined) {
    if (typeof input.ownerReferences !== 'boolean') bad(['ownerReferences'], 'must be a boolean');
    else ownerReferences = input.ownerReferences;
  }
  if (ownerReferences && namespace !== undefined) {
    bad(
      ['ownerReferences'],
      'needs each Pod in its Proxy namespace: unset namespace (an owner must be in the same namespace)',
    );
  }

  const stringList = (key: string, check: (s: string) => string | undefined): string[] => {
    const v = input[key];
    if (v === undefined) return [];
    if (!Array.isArray(v)) {
      bad([key], 'must be a list');
      return [];
    }
    const out: string[] = [];
    v.forEach((item, i) => {
      const problem = typeof item === 'string' ? check(item) : 'must be a string';
      if (problem !== undefined) bad([key, i], problem);
      else if (out.includes(item as string)) bad([key, i], `"${String(item)}" is listed twice`);
      else out.push(item as string);
    });
    return out;
  };
  const allowedSources = stringList('allowedSources', cidrProblem);
  const zones = stringList('zones', (s) =>
    s !== '' && s.length <= 63 && LABEL_VALUE.test(s)
      ? undefined
      : `"${s}" is not a zone name (a label value)`,
  );
  const imagePullSecrets = stringList('imagePullSecrets', (s) =>
    DNS_SUBDOMAIN.test(s) && s.length <= 253 ? undefined : `"${s}" is not a Secret name`,
  );

  let connectPorts: readonly number[] = CONFIG_DEFAULTS.connectPorts;
  if (input.connectPorts !== undefined) {
    const v = input.connectPorts;
    if (!Array.isArray(v) || v.length === 0) {
      bad(['connectPorts'], 'must be a non-empty list of TCP ports');
    } else {
      const ports: number[] = [];
      v.forEach((p, i) => {
        if (!Number.isInteger(p) || (p as number) < 1 || (p as number) > 65535) {
          bad(['connectPorts', i], `${JSON.stringify(p)} is not a TCP port (1 to 65535)`);
        } else if (ports.includes(p as number)) bad(['connectPorts', i], `${p} is listed twice`);
        else ports.push(p as number);
      });
      connectPorts = ports;
    }
  }

  let requestTimeoutSeconds: number = CONFIG_DEFAULTS.requestTimeoutSeconds;
  if (input.requestTimeoutSeconds !== undefined) {
    const v = input.requestTimeoutSeconds;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > 600) {
      bad(['requestTimeoutSeconds'], 'must be a number of seconds above 0 and at most 600');
    } else requestTimeoutSeconds = v;
  }

  let credentialsTtlSeconds: number = CONFIG_DEFAULTS.credentialsTtlSeconds;
  if (input.credentialsTtlSeconds !== undefined) {
    const v = input.credentialsTtlSeconds;
    if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 86_400) {
      bad(['credentialsTtlSeconds'], 'must be a whole number of seconds from 1 to 86400');
    } else credentialsTtlSeconds = v as number;
  }

  const images: Record<string, ImageEntry> = {};
  const rawImages = input.images;
  if (!isObject(rawImages) || Object.keys(rawImages).length === 0) {
    bad(['images'], 'must map at least one image key to { image }');
  } else {
    for (const [key, raw] of Object.entries(rawImages)) {
      const path: Path = ['images', key];
      if (!KEY_RE.test(key)) bad(path, `"${key}" is not a catalogue key (letters, digits, . _ -)`);
      if (!isObject(raw)) {
        bad(path, 'must be an object with image');
        continue;
      }
      for (const k of Object.keys(raw)) {
        if (!IMAGE_KEYS.has(k)) {
          bad([...path, k], `unknown field; expected one of ${[...IMAGE_KEYS].join(', ')}`);
        }
      }
      const image = raw.image;
      if (typeof image !== 'string' || !IMAGE_RE.test(image)) {
        bad([...path, 'image'], 'must be an image reference such as docker.io/ubuntu/squid:6.10');
      }
      const squidPath = raw.squidPath ?? CONFIG_DEFAULTS.squidPath;
      if (typeof squidPath !== 'string' || !squidPath.startsWith('/')) {
        bad([...path, 'squidPath'], 'must be an absolute path');
      }
      const ids: Record<'runAsUser' | 'runAsGroup', number> = {
        runAsUser: CONFIG_DEFAULTS.runAsUser,
        runAsGroup: CONFIG_DEFAULTS.runAsGroup,
      };
      for (const k of ['runAsUser', 'runAsGroup'] as const) {
        const v = raw[k];
        if (v === undefined) continue;
        if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 2_147_483_647) {
          bad([...path, k], 'must be a non-root id (an integer above 0)');
        } else ids[k] = v as number;
      }
      const pullPolicy = raw.pullPolicy;
      if (pullPolicy !== undefined && !(PULL_POLICIES as readonly unknown[]).includes(pullPolicy)) {
        bad([...path, 'pullPolicy'], `must be one of ${PULL_POLICIES.join(', ')}`);
      }
      images[key] = {
        image: image as string,
        squidPath: squidPath as string,
        ...ids,
        ...(pullPolicy === undefined ? {} : { pullPolicy: pullPolicy as ImageEntry['pullPolicy'] }),
      };
    }
  }

  const machineTypes: Record<string, MachineTypeEntry> = {};
  const rawMachines = input.machineTypes;
  if (!isObject(rawMachines) || Object.keys(rawMachines).length === 0) {
    bad(['machineTypes'], 'must map at least one machine type key to { cpu, memory }');
  } else {
    for (const [key, raw] of Object.entries(rawMachines)) {
      const path: Path = ['machineTypes', key];
      if (!KEY_RE.test(key)) bad(path, `"${key}" is not a catalogue key (letters, digits, . _ -)`);
      if (!isObject(raw)) {
        bad(path, 'must be an object with cpu and memory');
        continue;
      }
      for (const k of Object.keys(raw)) {
        if (!MACHINE_KEYS.has(k)) {
          bad([...path, k], `unknown field; expected one of ${[...MACHINE_KEYS].join(', ')}`);
        }
      }
      for (const k of ['cpu', 'memory', 'cpuLimit'] as const) {
        const v = raw[k];
        if (v === undefined && k === 'cpuLimit') continue;
        if (typeof v !== 'string' || !QUANTITY.test(v)) {
          bad(
            [...path, k],
            `must be a Kubernetes quantity such as ${k === 'memory' ? '128Mi' : '100m'}`,
          );
        }
      }
      machineTypes[key] = {
        cpu: raw.cpu as string,
        memory: raw.memory as string,
        ...(raw.cpuLimit === undefined ? {} : { cpuLimit: raw.cpuLimit as string }),
      };
    }
  }

  if (issues.length > 0) return { issues };
  return {
    value: {
      ...(kubeconfig === undefined ? {} : { kubeconfig }),
      ...(context === undefined ? {} : { context }),
      ...(tokenFile === undefined ? {} : { tokenFile }),
      ...(namespace === undefined ? {} : { namespace }),
      checkNamespace,
      ownerReferences,
      allowedSources,
      connectPorts,
      images,
      machineTypes,
      zones,
      imagePullSecrets,
      requestTimeoutSeconds,
      credentialsTtlSeconds,
    },
  };
}

/** The `kubernetes` block's schema (Standard Schema v1 shape). */
export const configSchema: ConfigSchema<KubernetesConfig> = Object.freeze({
  '~standard': Object.freeze({
    version: 1 as const,
    vendor: '@proxy-op/provider-kubernetes',
    validate,
  }),
});
