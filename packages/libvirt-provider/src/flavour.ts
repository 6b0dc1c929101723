/**
 * A flavour is what makes the engine one provider rather than another: its
 * type, its metadata namespace, its profile (address order, create-return,
 * listing failure policy, quota), its config-block compatibility layer and
 * its span and log prefix. Nothing else differs between the libvirt
 * providers.
 *
 * @module
 */
import { formatMark, type Mark, type Profile, parseMark } from '@proxy-op/contract';
import { MarkFormatError } from './errors.js';

/** Where an address can come from, in the order a flavour asks them. */
export type AddressSource = 'agent' | 'lease' | 'arp';

/**
 * The ownership mark in a domain's `<metadata>`: an element in the
 * flavour's own namespace, written in the `DomainDefineXML` call and read
 * back with `DomainGetMetadata`.
 */
export interface MetadataNamespace {
  /** The namespace URI; `DomainGetMetadata` looks the element up by it. */
  readonly uri: string;
  /** The namespace prefix written in the domain XML (`kvm2`). */
  readonly prefix: string;
  /** The element for `mark`, with its namespace declared, for the domain XML. */
  format(mark: Mark): string;
  /**
   * The mark in the element libvirt returns (libvirt drops the prefix);
   * undefined when the element says the domain is not managed. Throws a
   * {@link MarkFormatError} for an element it cannot read.
   */
  parse(xml: string): Mark | undefined;
}

/**
 * Rewrites a config block written for an earlier provider into the
 * engine's shape before it is validated (renamed fields, moved defaults).
 * The identity for a provider without history.
 */
export type ConfigCompat = (block: unknown) => unknown;

/** A libvirt provider: everything that sets it apart from its siblings on the engine. */
export interface LibvirtFlavour {
  /** The provider type in providers files (`kvm2`). */
  readonly type: string;
  /** Span and log prefix: spans `<prefix>.<call>`, `<prefix>.dial`, `<prefix>.download`. */
  readonly prefix: string;
  /** The OpenTelemetry instrumentation name (the provider package). */
  readonly instrumentation: string;
  /** The metadata namespace the flavour writes its marks in, and reads them from. */
  readonly metadata: MetadataNamespace;
  /**
   * The contract profile. The engine reads `createReturn` (`blocking` waits
   * for the domain to run, `submit` returns once it was started),
   * `listPartial` (`fail-whole` or `omit-unreachable` per host) and `quota`
   * (`detected` runs the pool-space precheck) from it.
   */
  readonly profile: Profile;
  /** Address sources in the order they are asked; the first routable IPv4 wins. */
  readonly addressSources: readonly AddressSource[];
  /** The config-block compatibility layer (identity when omitted). */
  readonly compat?: ConfigCompat | undefined;
  /**
   * Whether ListByTag also reports orphaned volumes: an overlay or seed
   * whose domain is gone, proven the engine's by its backing image or its
   * NoCloud label, as an instance with an empty UID (so garbage collection
   * removes it once it is older than its minimum age) dated by the
   * volumes' newest change. Volumes carry no mark, so every flavour and
   * installation listing the pool sees them. Off when omitted.
   */
  readonly listOrphanVolumes?: boolean | undefined;
}

const ATTR_RE = /([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
const ELEMENT_RE = /^\s*<([A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)((?:\s+[^<>]*?)?)\s*\/?>/;

/** Escapes text for an XML attribute value or text node. */
export function escapeXml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/** Undoes {@link escapeXml} and numeric character references. */
export function unescapeXml(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_m, e: string) => {
    if (e === 'amp') return '&';
    if (e === 'lt') return '<';
    if (e === 'gt') return '>';
    if (e === 'quot') return '"';
    if (e === 'apos') return "'";
    const code = e.startsWith('#x') ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1));
    return String.fromCodePoint(code);
  });
}

/**
 * The engine's mark element: one element named `element` whose attributes
 * are the contract's mark keys (`proxy-operator-managed`,
 * `proxy-operator-uid`, `proxy-operator-created-at`,
 * `proxy-operator-installation`), in namespace `uri` with prefix `prefix`.
 */
export function markElement(opts: {
  readonly uri: string;
  readonly prefix: string;
  readonly element: string;
}): MetadataNamespace {
  const { uri, prefix, element } = opts;
  return Object.freeze({
    uri,
    prefix,
    format(mark: Mark): string {
      const attrs = Object.entries(formatMark(mark))
        .map(([k, v]) => ` ${k}="${escapeXml(v)}"`)
        .join('');
      return `<${prefix}:${element} xmlns:${prefix}="${escapeXml(uri)}"${attrs}/>`;
    },
    parse(xml: string): Mark | undefined {
      const m = ELEMENT_RE.exec(xml);
      if (m === null || m[2] !== element) {
        throw new MarkFormatError(
          `the ${prefix} metadata element is not <${element}> (found ${JSON.stringify(xml.slice(0, 60))})`,
        );
      }
      const kv: Record<string, string> = {};
      for (const a of (m[3] ?? '').matchAll(ATTR_RE)) {
        const key = a[1] as string;
        if (!(key in kv)) kv[key] = unescapeXml(a[2] ?? a[3] ?? '');
      }
      return parseMark(kv);
    },
  });
}
