/**
 * From a flavour to a provider module: what the operator and
 * `createProvider` load.
 *
 * @module
 */
import {
  ipv6EgressOf,
  type ProviderModule,
  preemptionOf,
  profileProblems,
} from '@proxy-op/contract';
import { classify } from './classify.js';
import { type LibvirtConfig, type LibvirtDeps, libvirtConfigSchema } from './config.js';
import type { LibvirtFlavour } from './flavour.js';
import type { DomainId } from './id.js';
import { createImplementation } from './implementation.js';

/** The profile choices the engine can honour, axis by axis, where it has no choice. */
const FIXED = {
  readiness: ['provisioning-window'],
  createReturn: ['blocking', 'submit'],
  deleteReturn: ['waits'],
  ipSource: ['discovered'],
  gcMark: ['written-metadata'],
  createdAt: ['written-at-create'],
  listPartial: ['fail-whole', 'omit-unreachable'],
  notFound: ['error-code'],
  primaryKey: ['name-is-key'],
  provisioningState: ['create-blocks'],
  secondaryResources: ['explicit'],
  credentials: ['mounted-files'],
  clientKind: ['rpc-over-ssh'],
  timeouts: ['per-call'],
  childSpans: ['span-decorator'],
} as const;

/** What is wrong with a flavour, one line each (empty when it is usable). */
export function flavourProblems(f: LibvirtFlavour): string[] {
  const out = profileProblems(f.profile).map((p) => `profile: ${p}`);
  for (const [axis, allowed] of Object.entries(FIXED)) {
    const v = (f.profile as unknown as Record<string, unknown>)[axis];
    if (!(allowed as readonly unknown[]).includes(v)) {
      out.push(
        `profile.${axis}: the libvirt engine does ${allowed.join(' or ')}, not ${String(v)}`,
      );
    }
  }
  if (f.profile.asyncOps.length > 0) out.push('profile.asyncOps: the libvirt engine has none');
  // A host never takes a domain back, and the engine routes no IPv6 range to a guest.
  if (preemptionOf(f.profile) !== 'never') {
    out.push(`profile.preemption: the libvirt engine does never, not ${f.profile.preemption}`);
  }
  if (ipv6EgressOf(f.profile) !== 'none') {
    out.push(`profile.ipv6Egress: the libvirt engine does none, not ${f.profile.ipv6Egress}`);
  }
  if (!/^[a-z][a-z0-9-]*$/.test(f.type)) out.push(`type "${f.type}" is not a lowercase name`);
  if (!/^[a-z][a-z0-9_]*$/.test(f.prefix)) out.push(`prefix "${f.prefix}" is not a span prefix`);
  if (f.addressSources.length === 0) out.push('addressSources: name at least one source');
  if (new Set(f.addressSources).size !== f.addressSources.length) {
    out.push('addressSources: a source is listed twice');
  }
  if (!/^[a-z][a-z0-9+.-]*:\S+$/.test(f.metadata.uri)) out.push('metadata.uri: not a URI');
  return out;
}

/**
 * The provider module of a flavour: `type`, the config schema (the
 * flavour's compatibility layer, then the engine's validation), the
 * flavour's profile, the engine's `classify`, and `create`. Throws a
 * `TypeError` for a flavour the engine cannot run.
 */
export function libvirtProviderModule(
  flavour: LibvirtFlavour,
): ProviderModule<LibvirtConfig, LibvirtDeps, DomainId> {
  const problems = flavourProblems(flavour);
  if (problems.length > 0) {
    throw new TypeError(`libvirtProviderModule(${flavour.type}): ${problems.join('; ')}`);
  }
  return Object.freeze<ProviderModule<LibvirtConfig, LibvirtDeps, DomainId>>({
    type: flavour.type,
    configSchema: libvirtConfigSchema(flavour.instrumentation, flavour.compat),
    profile: flavour.profile,
    classify,
    create: (name, config, deps) => createImplementation(flavour, name, config, deps),
  });
}
