/**
 * Validation of a folder of Proxy manifests without a store, for
 * `proxy-op validate`.
 *
 * @module
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LineCounter, parseAllDocuments } from 'yaml';
import { formatProblems, validateProxyManifest } from './schema.js';

/**
 * Validates every `*.yaml`/`*.yml` file in `dir`: YAML syntax (with line and
 * column), each document against the Proxy schema (with paths), and
 * duplicate names. Resolves with the number of valid Proxies and every
 * problem.
 */
export async function validateManifestsDir(
  dir: string,
): Promise<{ count: number; problems: string[] }> {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  const files = (await readdir(dir))
    .filter((n) => /\.ya?ml$/i.test(n) && !n.startsWith('.'))
    .sort();
  for (const file of files) {
    const text = await readFile(join(dir, file), 'utf8');
    const lc = new LineCounter();
    const docs = parseAllDocuments(text, { lineCounter: lc });
    if (!Array.isArray(docs)) continue;
    docs.forEach((doc, i) => {
      const where = docs.length > 1 ? `${file} (document ${i + 1})` : file;
      for (const e of doc.errors) {
        const pos = lc.linePos(e.pos[0]);
        problems.push(`${where}: line ${pos.line}, column ${pos.col}: ${e.message.split('\n')[0]}`);
      }
      if (doc.errors.length > 0) return;
      const raw: unknown = doc.toJS();
      if (raw === null || raw === undefined) return;
      const v = validateProxyManifest(raw);
      if (!v.ok) {
        for (const line of formatProblems(v.problems)) problems.push(`${where}: ${line}`);
        return;
      }
      const key = `${v.value.metadata.namespace}/${v.value.metadata.name}`;
      const dup = seen.get(key);
      if (dup !== undefined)
        problems.push(`${where}: metadata.name: ${key} is already defined in ${dup}`);
      else seen.set(key, where);
    });
  }
  return { count: seen.size, problems };
}
