/**
 * The default cloud-init: Squid on a Debian or Ubuntu image, listening on the
 * Proxy's port and allowing only its `allowedSources`.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type { ProxyAuth } from '@proxy-op/contract';
import type { EgressPolicy } from '@proxy-op/egress';
import {
  renderSquidConfig as renderSquid,
  SERVICE_PASSWORD_FILE,
  SERVICE_PATHS,
} from '@proxy-op/squid-config';
import { canonicalJson } from '../api/canonical-json.js';
import type { ProxySpec } from '../api/proxy.js';

/** What the generated cloud-init takes of a Proxy's credentials: the realm and the password file. */
export type CloudInitAuth = ProxyAuth;

/** What the spec hash is computed over in place of the password file (which rotates in place). */
const FILE_IN_HASH = new TextEncoder().encode('# the password file\n');

/** Squid configurations rendered, by their settings; cleared past {@link RENDERED_MAX}. */
const rendered = new Map<string, string>();
const RENDERED_MAX = 1000;

/**
 * The Squid configuration for a spec, as `@proxy-op/squid-config` renders
 * it for the `squid` service of Debian and Ubuntu: only the spec's
 * `allowedSources` on its port, the destination policy (`egress`, by
 * default the spec's: loopback, private, link-local and metadata
 * destinations refused, CONNECT only to 443), no cache manager, no query
 * strings in the access log.
 */
export function renderSquidConfig(
  spec: Pick<ProxySpec, 'port' | 'allowedSources' | 'egress'>,
  auth?: Pick<ProxyAuth, 'realm'> | undefined,
  egress: EgressPolicy | undefined = spec.egress,
): string {
  const settings = {
    port: spec.port,
    allowedSources: spec.allowedSources,
    ...(egress === undefined ? {} : { egress }),
    paths: SERVICE_PATHS,
    ...(auth === undefined
      ? {}
      : { auth: { realm: auth.realm, passwordFile: SERVICE_PASSWORD_FILE } }),
  };
  // Most Proxies share their settings (a pool's all do), and a pass renders more than once.
  const key = canonicalJson(settings);
  let text = rendered.get(key);
  if (text === undefined) {
    text = renderSquid(settings);
    if (rendered.size >= RENDERED_MAX) rendered.clear();
    rendered.set(key, text);
  }
  return text;
}

/**
 * The cloud-init user data for a spec: the spec's own `cloudInit` when it
 * has one, otherwise a `#cloud-config` for Debian or Ubuntu that installs
 * Squid, writes {@link renderSquidConfig} and restarts it. The same spec
 * always renders the same bytes (the text is part of the spec hash).
 */
export function renderCloudInit(
  spec: Pick<ProxySpec, 'port' | 'allowedSources' | 'cloudInit' | 'egress'>,
  auth?: CloudInitAuth | undefined,
  egress: EgressPolicy | undefined = spec.egress,
): string {
  if (spec.cloudInit !== undefined) return spec.cloudInit;
  const indent = (text: string) =>
    text
      .trimEnd()
      .split('\n')
      .map((l) => `      ${l}`)
      .join('\n');
  const conf = indent(renderSquidConfig(spec, auth, egress));
  // Squid's helper runs as the proxy user: the file is readable by root and that group only.
  // The group exists once the squid package is in, after write_files has run (and not every
  // distribution runs deferred writes): runcmd gives the file to it before restarting Squid.
  const passwd =
    auth === undefined
      ? []
      : [
          `  - path: ${SERVICE_PASSWORD_FILE}`,
          '    owner: root:root',
          "    permissions: '0640'",
          '    content: |',
          indent(new TextDecoder().decode(auth.passwordFile)),
        ];
  return [
    '#cloud-config',
    'package_update: true',
    'packages:',
    '  - squid',
    'write_files:',
    '  - path: /etc/squid/conf.d/proxy-op.conf',
    '    owner: root:root',
    "    permissions: '0644'",
    '    content: |',
    conf,
    '  - path: /etc/squid/squid.conf',
    '    owner: root:root',
    "    permissions: '0644'",
    '    content: |',
    '      include /etc/squid/conf.d/proxy-op.conf',
    ...passwd,
    'runcmd:',
    ...(auth === undefined ? [] : [`  - [chgrp, proxy, ${SERVICE_PASSWORD_FILE}]`]),
    '  - [systemctl, enable, squid]',
    '  - [systemctl, restart, squid]',
    '',
  ].join('\n');
}

/**
 * The spec hash: SHA-256 (first 16 hex digits) over the provider, placement,
 * port, allowed sources, the rendered cloud-init (with its password file's
 * place, not its lines) and the credentials' mode. A change to any of them
 * (including the generated cloud-init, when proxy-op's template changes)
 * replaces the instance.
 */
export function specHash(spec: ProxySpec, auth?: HashedAuth | undefined): string {
  return hashOf(spec, auth, spec.cloudInit ?? renderCloudInit(spec));
}

/** What the spec hash takes of a Proxy's credentials: the realm and the mode, never a credential. */
export interface HashedAuth {
  /** The realm the proxy names. */
  readonly realm: string;
  /** The credentials' mode (`basic`, `secretRef:NAME`). */
  readonly hashInput: string;
}

function hashOf(spec: ProxySpec, auth: HashedAuth | undefined, plain: string): string {
  // The hash sees the password file's place in the cloud-init, not its lines: a rotation in
  // place replaces nothing. Without credentials the input is what it was before they existed.
  const hashed =
    auth === undefined
      ? plain
      : renderCloudInit(spec, { realm: auth.realm, passwordFile: FILE_IN_HASH });
  const input = canonicalJson({
    provider: spec.provider,
    placement: spec.placement,
    port: spec.port,
    allowedSources: spec.allowedSources,
    cloudInit: hashed,
    auth: auth?.hashInput,
  });
  return createHash('sha256').update(input).digest('hex').slice(0, 16);
}

/** What a spec is rendered with of its credentials: what Create passes, and what the hash takes. */
export interface SpecAuth {
  /** The realm and the password file. */
  readonly auth: ProxyAuth;
  /** The credentials' part of the hash: their mode (`basic`, `secretRef:NAME`), never a credential. */
  readonly hashInput: string;
}

/** A spec's cloud-init, the destination policy its proxy gets, and its {@link specHash}. */
export interface RenderedSpec {
  readonly cloudInit: string;
  /** The spec's `egress` with the operator's own destinations allowed on top; undefined: the defaults. */
  readonly egress: EgressPolicy | undefined;
  readonly hash: string;
}

/**
 * The destination policy of a Proxy's proxy: its `spec.egress`, and the
 * operator's own destinations (`operatorAllow`: its probe target) allowed
 * on top, so the probes reach their target whatever the defaults refuse.
 */
export function effectiveEgress(
  spec: Pick<ProxySpec, 'egress'>,
  operatorAllow: readonly string[],
): EgressPolicy | undefined {
  if (operatorAllow.length === 0) return spec.egress;
  const allow = [...(spec.egress?.allow ?? [])];
  for (const entry of operatorAllow) if (!allow.includes(entry)) allow.push(entry);
  return { ...spec.egress, allow };
}

/**
 * Renders a spec's cloud-init once and hashes the spec, so a reconcile pass
 * uses one rendering for both the hash and the Create. The operator's own
 * destinations (`operatorAllow`) are in the cloud-init and the policy, not
 * in the hash: a probe target that moves replaces no instance.
 */
export function renderSpec(
  spec: ProxySpec,
  auth?: SpecAuth | undefined,
  operatorAllow: readonly string[] = [],
): RenderedSpec {
  const egress = effectiveEgress(spec, operatorAllow);
  const cloudInit = renderCloudInit(spec, auth?.auth, egress);
  const hashed =
    auth === undefined ? undefined : { realm: auth.auth.realm, hashInput: auth.hashInput };
  const plain = egress === spec.egress ? cloudInit : renderCloudInit(spec, auth?.auth);
  return { cloudInit, egress, hash: hashOf(spec, hashed, plain) };
}
