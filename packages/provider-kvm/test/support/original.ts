// The original kvm provider's mark, as it wrote it into a domain's <metadata>
// and as libvirt hands it back: the fixtures the kvm tests plant.
import { MarkKey } from '@proxy-op/contract';
import { escapeXml } from '@proxy-op/libvirt-provider';
import { METADATA_URI } from '../../src/metadata.js';

/** The fields of the original's element: `managed`, `uid`, `createdAt` (no installation). */
export interface OriginalFields {
  readonly managed?: string | undefined;
  readonly uid?: string | undefined;
  readonly createdAt?: string | undefined;
  readonly installation?: string | undefined;
}

const CHILDREN: readonly (keyof OriginalFields)[] = ['managed', 'uid', 'createdAt', 'installation'];

/** The element as the original wrote it in `DomainDefineXML`: prefixed, namespace declared. */
export function originalElement(f: OriginalFields, prefix = 'proxy'): string {
  const children = CHILDREN.filter((k) => f[k] !== undefined)
    .map((k) => `<${prefix}:${k}>${escapeXml(f[k] as string)}</${prefix}:${k}>`)
    .join('');
  return `<${prefix}:instance xmlns:${prefix}="${METADATA_URI}">${children}</${prefix}:instance>`;
}

/** The same element as libvirt returns it from `DomainGetMetadata`: no prefix, one child a line. */
export function storedOriginal(f: OriginalFields): string {
  const children = CHILDREN.filter((k) => f[k] !== undefined).map(
    (k) =>
      `  <${k}>${escapeXml(f[k] as string)
        .replace(/&apos;/g, "'")
        .replace(/&quot;/g, '"')}</${k}>`,
  );
  return `<instance>\n${children.join('\n')}\n</instance>`;
}

/** The conformance kit's planted mark (contract keys) as the original's element. */
export function plantOriginal(pairs: Record<string, string>): string {
  return storedOriginal({
    managed: pairs[MarkKey.Managed],
    uid: pairs[MarkKey.Uid],
    createdAt: pairs[MarkKey.CreatedAt],
    installation: pairs[MarkKey.Installation],
  });
}
