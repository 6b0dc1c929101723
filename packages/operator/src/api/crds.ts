/**
 * The CustomResourceDefinitions of `Proxy`, `ProxyPool` and
 * `ProviderHealth`, generated from the JSON schemas the TypeScript types
 * come from, so schema, type and CRD never disagree. `proxy-op crds` prints them; the deploy manifests ship the same
 * text (a test fails when they drift).
 *
 * @module
 */
import { stringify } from 'yaml';
import { poolSpecSchema, poolStatusSchema } from './pool.js';
import {
  GROUP,
  providerHealthStatusSchema,
  proxySpecSchema,
  proxyStatusSchema,
  VERSION,
} from './proxy.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/**
 * Turns one of our JSON schemas into a structural schema the API server
 * accepts: `additionalProperties: false` goes (the server prunes unknown
 * fields instead), `const` becomes a one-value `enum`, and a value that may
 * be a string, a number or a boolean keeps whatever it is
 * (`x-kubernetes-preserve-unknown-fields`), since a structural schema has one
 * type per node.
 */
export function toStructural(schema: unknown): Json {
  if (Array.isArray(schema)) return schema.map(toStructural);
  if (schema === null || typeof schema !== 'object') return schema as Json;
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s.type)) return { 'x-kubernetes-preserve-unknown-fields': true };
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'additionalProperties' && v === false) continue;
    if (k === 'const') {
      out.enum = [v as Json];
      continue;
    }
    if (k === 'properties') {
      const props: Record<string, Json> = {};
      for (const [name, p] of Object.entries(v as Record<string, unknown>)) {
        props[name] = toStructural(p);
      }
      out.properties = props;
      continue;
    }
    out[k] = k === 'items' || k === 'additionalProperties' ? toStructural(v) : (v as Json);
  }
  return out;
}

const LABELS = { 'app.kubernetes.io/name': 'proxy-op', 'app.kubernetes.io/part-of': 'proxy-op' };

function crd(opts: {
  plural: string;
  singular: string;
  kind: string;
  scope: 'Namespaced' | 'Cluster';
  shortNames: string[];
  description: string;
  properties: Record<string, Json>;
  required?: string[];
  columns: Array<{ name: string; type: string; jsonPath: string; description: string }>;
  /** The scale subresource's paths, for a resource with replicas. */
  scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath: string };
}): Record<string, Json> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${opts.plural}.${GROUP}`, labels: LABELS },
    spec: {
      group: GROUP,
      scope: opts.scope,
      names: {
        plural: opts.plural,
        singular: opts.singular,
        kind: opts.kind,
        listKind: `${opts.kind}List`,
        shortNames: opts.shortNames,
        categories: ['proxy-op'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources:
            opts.scale === undefined ? { status: {} } : { status: {}, scale: opts.scale },
          additionalPrinterColumns: [
            ...opts.columns,
            {
              name: 'Age',
              type: 'date',
              jsonPath: '.metadata.creationTimestamp',
              description: 'Time since creation',
            },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: opts.description,
              ...(opts.required ? { required: opts.required } : {}),
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                ...opts.properties,
              },
            },
          },
        },
      ],
    },
  };
}

/** The CRDs, as objects: Proxy, ProviderHealth, ProxyPool. */
export function customResourceDefinitions(): Record<string, Json>[] {
  return [
    crd({
      plural: 'proxies',
      singular: 'proxy',
      kind: 'Proxy',
      scope: 'Namespaced',
      shortNames: ['px'],
      description:
        'An egress proxy: the operator creates it on the named provider, replaces it when the spec changes and deletes it with the Proxy.',
      required: ['spec'],
      properties: {
        spec: toStructural(proxySpecSchema),
        status: toStructural(proxyStatusSchema),
      },
      columns: [
        {
          name: 'Provider',
          type: 'string',
          jsonPath: '.spec.provider',
          description: 'The configured provider',
        },
        { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'The phase' },
        {
          name: 'Endpoint',
          type: 'string',
          jsonPath: '.status.endpoint',
          description: 'http://ip:port once Ready',
        },
        {
          name: 'Egress',
          type: 'string',
          jsonPath: '.status.egressIP',
          description: 'The source address the probe target saw',
        },
      ],
    }),
    crd({
      plural: 'providerhealths',
      singular: 'providerhealth',
      kind: 'ProviderHealth',
      scope: 'Cluster',
      shortNames: ['ph'],
      description:
        'The health of one configured provider, written by the operator after each check round.',
      properties: { status: toStructural(providerHealthStatusSchema) },
      columns: [
        { name: 'Type', type: 'string', jsonPath: '.status.type', description: 'Provider type' },
        {
          name: 'Ready',
          type: 'boolean',
          jsonPath: '.status.ready',
          description: 'Every target ready',
        },
        {
          name: 'Last Check',
          type: 'date',
          jsonPath: '.status.lastCheckTime',
          description: 'Time of the last check round',
        },
      ],
    }),
    crd({
      plural: 'proxypools',
      singular: 'proxypool',
      kind: 'ProxyPool',
      scope: 'Namespaced',
      shortNames: ['ppool'],
      description:
        'A fleet of Proxies made from one template: scaled, rolled make-before-break, rotated by age, remediated, spread over providers, its verified endpoints published.',
      required: ['spec'],
      properties: {
        spec: toStructural(poolSpecSchema),
        status: toStructural(poolStatusSchema),
      },
      scale: {
        specReplicasPath: '.spec.replicas',
        statusReplicasPath: '.status.replicas',
        labelSelectorPath: '.status.selector',
      },
      columns: [
        {
          name: 'Desired',
          type: 'integer',
          jsonPath: '.spec.replicas',
          description: 'Proxies wanted',
        },
        {
          name: 'Ready',
          type: 'integer',
          jsonPath: '.status.readyReplicas',
          description: 'Ready Proxies',
        },
        {
          name: 'Up-To-Date',
          type: 'integer',
          jsonPath: '.status.updatedReplicas',
          description: 'Proxies of the current template',
        },
        {
          name: 'Available',
          type: 'integer',
          jsonPath: '.status.availableReplicas',
          description: 'Proxies published as endpoints',
        },
      ],
    }),
  ];
}

/** The CRDs as the YAML `proxy-op crds` prints and `deploy/base/crds.yaml` holds. */
export function crdsYaml(): string {
  const header = "# Generated by `proxy-op crds` from the operator's JSON schemas; do not edit.\n";
  return (
    header +
    customResourceDefinitions()
      .map((c) => stringify(c, { lineWidth: 0, aliasDuplicateObjects: false }))
      .join('---\n')
  );
}
