/**
 * `proxy-op status --standalone DIR`: the Proxies (with their egress IP
 * and probe state) and ProviderHealth a standalone operator recorded in
 * its state file, as tables or JSON lines.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { age, probeCell, table } from '../page/live-table.js';
import { entryToProxy, readStateFile } from '../standalone/state-file.js';
import { splitKey } from '../store/proxies.js';
import { targetOf } from './target.js';

/** Runs `proxy-op status`; resolves with the exit code. */
export async function status(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      standalone: { type: 'string' },
      state: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help || values.standalone === undefined) {
    process.stdout.write(
      'usage: proxy-op status --standalone DIR [--state FILE] [--json]\n\nPrints the Proxies and ProviderHealth recorded in the state file.\n',
    );
    return values.help ? 0 : 2;
  }
  const where = targetOf({ namespace: 'default', ...values });
  if (where.kind !== 'standalone') return 2;
  const state = await readStateFile(where.stateFile);
  const keys = Object.keys(state.proxies).sort();
  if (values.json) {
    for (const key of keys) {
      const e = state.proxies[key];
      if (e === undefined) continue;
      process.stdout.write(
        `${JSON.stringify({ proxy: key, uid: e.uid, deleting: e.deletionTimestamp !== undefined, spec: e.spec, status: e.status })}\n`,
      );
    }
    return 0;
  }
  const now = Date.now();
  const rows: string[][] = [
    ['NAMESPACE', 'NAME', 'PROVIDER', 'PHASE', 'ENDPOINT', 'EGRESS', 'PROBE', 'COST/H', 'AGE'],
  ];
  for (const key of keys) {
    const e = state.proxies[key];
    if (e === undefined) continue;
    const { namespace, name } = splitKey(key);
    rows.push([
      namespace,
      name,
      e.spec.provider,
      e.deletionTimestamp !== undefined ? 'Deleting' : (e.status.phase ?? 'Pending'),
      e.status.endpoint ?? '',
      e.status.egressIP ?? '',
      probeCell(entryToProxy(key, e)),
      e.status.cost === undefined ? '' : `${e.status.cost.perHour} ${e.status.cost.currency}`,
      age(e.creationTimestamp, now),
    ]);
  }
  process.stdout.write(`${table(rows)}\n`);
  const health = Object.entries(state.health);
  if (health.length > 0) {
    const hr: string[][] = [['PROVIDER', 'TYPE', 'READY', 'TARGETS']];
    for (const [name, h] of health) {
      hr.push([
        name,
        h.type,
        h.ready ? 'yes' : 'no',
        h.targets.map((t) => `${t.target}:${t.reason}`).join(' '),
      ]);
    }
    process.stdout.write(`\n${table(hr)}\n`);
  }
  return 0;
}
