/**
 * kvm's mark: the original kvm provider's metadata element, an
 * `<instance>` in kvm's namespace whose child elements say `managed`,
 * `uid` and `createdAt`. This package writes the same element with one
 * more child, `installation`, which the original's reader passes over, and
 * reads the element whichever way it was written: as child elements or as
 * attributes, under the original's names or the contract's mark keys.
 *
 * @module
 */
import {
  DEFAULT_INSTALLATION,
  formatMarkTime,
  MANAGED_VALUE,
  type Mark,
  MarkKey,
} from '@proxy-op/contract';
import {
  escapeXml,
  MarkFormatError,
  type MetadataNamespace,
  unescapeXml,
} from '@proxy-op/libvirt-provider';

/** The namespace of kvm's mark in a domain's `<metadata>`, the original kvm provider's. */
export const METADATA_URI = 'https://proxy-operator.dev/xmlns/kvm/1';

/** The prefix written in the domain XML (libvirt returns the element without it). */
export const METADATA_PREFIX = 'kvm';

/** The mark element's name. */
export const METADATA_ELEMENT = 'instance';

type Field = 'managed' | 'uid' | 'createdAt' | 'installation';

/** Each field under the original's child name and under the contract's mark key. */
const FIELD_NAMES: Readonly<Record<string, Field>> = {
  managed: 'managed',
  uid: 'uid',
  createdAt: 'createdAt',
  installation: 'installation',
  [MarkKey.Managed]: 'managed',
  [MarkKey.Uid]: 'uid',
  [MarkKey.CreatedAt]: 'createdAt',
  [MarkKey.Installation]: 'installation',
};

/** What Go's `strconv.ParseBool` reads as true and as false: the original wrote a Go bool. */
const TRUE_WORDS = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_WORDS = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * An RFC 3339 time (any offset, up to nanoseconds, as Go writes it); epoch
 * 0 for anything else, as the contract asks of an unreadable creation time.
 */
export function parseCreatedAt(text: string): Date {
  const m = RFC3339.exec(text.trim());
  if (m === null) return new Date(0);
  const [, y, mo, d, h, mi, s, frac, z, sign, oh, om] = m;
  const ms = Number((frac ?? '').padEnd(3, '0').slice(0, 3));
  let t = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), ms);
  const check = new Date(t);
  if (
    Number.isNaN(t) ||
    check.getUTCFullYear() !== Number(y) ||
    check.getUTCMonth() !== Number(mo) - 1 ||
    check.getUTCDate() !== Number(d) ||
    Number(h) > 23 ||
    Number(mi) > 59 ||
    Number(s) > 60
  ) {
    return new Date(0);
  }
  if (z === undefined) t -= (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om)) * 60_000;
  return new Date(t);
}

const ROOT_RE = /^\s*<(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)((?:\s+[^<>]*?)?)\s*(\/?)>/;
const ATTR_RE = /([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
const CHILD_RE =
  /<(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)(?:\s+[^<>]*?)?\s*(?:\/>|>((?:<!\[CDATA\[[\s\S]*?\]\]>|[^<])*)<\/(?:[A-Za-z_][\w.-]*:)?\1\s*>)/g;

/** The text of an element: entities decoded, CDATA sections unwrapped, trimmed. */
function textOf(raw: string): string {
  return raw
    .split(/(<!\[CDATA\[[\s\S]*?\]\]>)/)
    .map((part) => (part.startsWith('<![CDATA[') ? part.slice(9, -3) : unescapeXml(part)))
    .join('')
    .trim();
}

/**
 * Reads kvm's mark from the element libvirt returns: undefined when it
 * says the domain is not managed (or does not say it is); a
 * `MarkFormatError` (of `@proxy-op/libvirt-provider`) for another element or a `managed` that is not
 * a boolean.
 */
export function parseKvmMark(xml: string): Mark | undefined {
  const root = ROOT_RE.exec(xml);
  if (root === null || root[1] !== METADATA_ELEMENT) {
    throw new MarkFormatError(
      `the kvm metadata element is not <${METADATA_ELEMENT}> (found ${JSON.stringify(xml.slice(0, 60))})`,
    );
  }
  const fields = new Map<Field, string>();
  const take = (name: string, value: string) => {
    const field = FIELD_NAMES[name];
    if (field !== undefined && !fields.has(field)) fields.set(field, value);
  };
  for (const a of (root[2] ?? '').matchAll(ATTR_RE)) {
    take(a[1] as string, unescapeXml(a[2] ?? a[3] ?? '').trim());
  }
  if (root[3] !== '/') {
    const body = xml.slice(root[0].length);
    for (const c of body.matchAll(CHILD_RE)) take(c[1] as string, textOf(c[2] ?? ''));
  }
  const managed = fields.get('managed') ?? '';
  if (managed === '' || FALSE_WORDS.has(managed)) return undefined;
  if (!TRUE_WORDS.has(managed)) {
    throw new MarkFormatError(
      `the kvm metadata element says managed ${JSON.stringify(managed.slice(0, 20))}, not a boolean`,
    );
  }
  const installation = fields.get('installation') ?? '';
  return {
    uid: fields.get('uid') ?? '',
    createdAt: parseCreatedAt(fields.get('createdAt') ?? ''),
    installation: installation === '' ? DEFAULT_INSTALLATION : installation,
  };
}

/**
 * kvm's mark element for the domain XML: the original's children
 * (`managed`, `uid`, `createdAt` in RFC 3339 UTC) and `installation`.
 */
export function formatKvmMark(mark: Mark): string {
  const p = METADATA_PREFIX;
  const child = (name: string, value: string) => `<${p}:${name}>${escapeXml(value)}</${p}:${name}>`;
  return [
    `<${p}:${METADATA_ELEMENT} xmlns:${p}="${escapeXml(METADATA_URI)}">`,
    child('managed', MANAGED_VALUE),
    child('uid', mark.uid),
    child('createdAt', formatMarkTime(mark.createdAt)),
    child('installation', mark.installation),
    `</${p}:${METADATA_ELEMENT}>`,
  ].join('');
}

/** kvm's metadata namespace, as the engine takes it. */
export const kvmMetadata: MetadataNamespace = Object.freeze({
  uri: METADATA_URI,
  prefix: METADATA_PREFIX,
  format: formatKvmMark,
  parse: parseKvmMark,
});
