/**
 * The original kvm config block, read as the engine's. Its fields are the
 * engine's own, but it was read into Go structs, where a field left empty
 * (`""`, `0`, or YAML's bare `key:`) meant "use the default": this layer
 * drops such values so the engine fills its defaults, instead of refusing
 * them.
 *
 * @module
 */

/** Fields whose empty value meant the default, at the top of the block. */
const TOP = ['sshKeyFile', 'knownHostsFile', 'diskSizeGb', 'vendorData'] as const;
/** The same, in each `hosts[]` entry. */
const HOST = ['socket', 'pool', 'bridge', 'port', 'uri', 'domainType'] as const;
/** The same, in each `images.<key>` entry. */
const IMAGE = ['format', 'firmware'] as const;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isEmpty(v: unknown): boolean {
  return v === null || v === '' || v === 0;
}

function withoutEmpty(
  o: Record<string, unknown>,
  keys: readonly string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...o };
  for (const k of keys) if (k in out && isEmpty(out[k])) delete out[k];
  return out;
}

/**
 * The block with Go's empty values removed where they meant the default;
 * anything that is not shaped like a block is passed on for the engine to
 * refuse with its paths.
 */
export function kvmCompat(block: unknown): unknown {
  if (!isRecord(block)) return block;
  const out = withoutEmpty(block, TOP);
  if (Array.isArray(block.hosts)) {
    out.hosts = block.hosts.map((h: unknown) => (isRecord(h) ? withoutEmpty(h, HOST) : h));
  }
  if (isRecord(block.images)) {
    out.images = Object.fromEntries(
      Object.entries(block.images).map(([k, v]) => [k, isRecord(v) ? withoutEmpty(v, IMAGE) : v]),
    );
  }
  return out;
}
