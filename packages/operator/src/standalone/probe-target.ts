/**
 * Where the standalone operator's own probe target served, kept beside the
 * state file (`DIR.state.probe.json`): the next run listens there again,
 * where its Proxies' destination policies let them reach it, and
 * `proxy-op probe` probes against it.
 *
 * @module
 */
import { readOwnedFile, writeFileAtomic } from '@proxy-op/contract/files';
import type { ServedAt, TargetPorts } from '../probe/target.js';
import { besideStateFile } from './state-file.js';

/** The probe target's place beside `stateFile`. */
export function keptTarget(stateFile: string): TargetPorts {
  const file = besideStateFile(stateFile, 'probe.json');
  return {
    async read() {
      let text: string;
      try {
        text = (await readOwnedFile(file, { maxBytes: 4096 })).toString('utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
      const v = JSON.parse(text) as Partial<ServedAt>;
      return typeof v.http === 'string'
        ? { http: v.http, ...(typeof v.https === 'string' ? { https: v.https } : {}) }
        : undefined;
    },
    write: (at) => writeFileAtomic(file, `${JSON.stringify(at)}\n`),
  };
}
