// Peer: none: the README's limits table held to DEFAULT_LIMITS.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../src/index.js';

describe('the README', () => {
  it('lists every limit with its default, as DEFAULT_LIMITS has it', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const section = readme.slice(
      readme.indexOf('### Limits'),
      readme.indexOf('## What it refuses'),
    );
    const rows = [...section.matchAll(/^\| `(\w+)` \| `(\d+)` \|/gm)].map((m) => [
      m[1],
      Number(m[2]),
    ]);
    expect(Object.fromEntries(rows)).toEqual(DEFAULT_LIMITS);
    expect(rows).toHaveLength(Object.keys(DEFAULT_LIMITS).length);
  });
});
