/**
 * The default cloud-init: Squid on a Debian or Ubuntu image, listening on the
 * Proxy's port and allowing only its `allowedSources`.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { renderSquidConfig as renderSquid, SERVICE_PATHS } from '@proxy-op/squid-config';
import type { ProxySpec } from './schema.js';

/**
 * The Squid configuration for a spec, as `@proxy-op/squid-config` renders
 * it for the `squid` service of Debian and Ubuntu: only the spec's
 * `allowedSources` on its port, CONNECT only to 443, no link-local
 * destinations or cache manager, no query strings in the access log.
 */
export function renderSquidConfig(spec: Pick<ProxySpec, 'port' | 'allowedSources'>): string {
  return renderSquid({
    port: spec.port,
    allowedSources: spec.allowedSources,
    paths: SERVICE_PATHS,
  });
}

/**
 * The cloud-init user data for a spec: the spec's own `cloudInit` when it
 * has one, otherwise a `#cloud-config` for Debian or Ubuntu that installs
 * Squid, writes {@link renderSquidConfig} and restarts it. The same spec
 * always renders the same bytes (the text is part of the spec hash).
 */
export function renderCloudInit(
  spec: Pick<ProxySpec, 'port' | 'allowedSources' | 'cloudInit'>,
): string {
  if (spec.cloudInit !== undefined) return spec.cloudInit;
  const conf = renderSquidConfig(spec)
    .trimEnd()
    .split('\n')
    .map((l) => `      ${l}`)
    .join('\n');
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
    'runcmd:',
    '  - [systemctl, enable, squid]',
    '  - [systemctl, restart, squid]',
    '',
  ].join('\n');
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The spec hash: SHA-256 (first 16 hex digits) over the provider, placement,
 * port, allowed sources and the rendered cloud-init. A change to any of them
 * (including the generated cloud-init, when proxy-op's template changes)
 * replaces the instance.
 */
export function specHash(spec: ProxySpec): string {
  const input = canonical({
    provider: spec.provider,
    placement: spec.placement,
    port: spec.port,
    allowedSources: spec.allowedSources,
    cloudInit: renderCloudInit(spec),
  });
  return createHash('sha256').update(input).digest('hex').slice(0, 16);
}

/** A canonical JSON text of any plain value (sorted keys), for comparisons. */
export function canonicalJson(value: unknown): string {
  return canonical(value);
}
