// Peer: none (the status view over a memory store, stdout captured).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Operator } from '../src/manager/operator.js';
import { startStatusView } from '../src/page/live-table.js';
import { ProviderSet } from '../src/providers/set.js';
import { MemoryStore } from '../src/store/proxies.js';
import { spec } from './support.js';

afterEach(() => {
  vi.restoreAllMocks();
});

function capture(): string[] {
  const out: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  });
  return out;
}

describe('the live table', () => {
  it('lists the Proxies, then every invalid manifest with its problem, and counts them', () => {
    const store = Object.assign(new MemoryStore(), {
      problems: () => [
        'broken.yaml: spec.port: must be >= 1',
        'two.yaml (document 2): spec.allowedSources[0]: must be a CIDR such as 10.0.0.0/8 or fd00::/8',
      ],
    });
    store.apply('default', 'web', spec({ provider: 'lab' }));
    const operator = new Operator({ store, providers: new ProviderSet() });
    const out = capture();
    startStatusView(store, 'table', operator).stop();
    const screen = (out.at(-1) ?? '').replace('\x1b[H\x1b[2J', '');
    expect(screen.split('\n')).toEqual([
      'NAMESPACE  NAME  PROVIDER  PHASE    ENDPOINT  EGRESS  PROBE  AGE  ERROR',
      'default    web   lab       Pending                           0s',
      '',
      'INVALID                PROBLEM',
      'broken.yaml            spec.port: must be >= 1',
      'two.yaml (document 2)  spec.allowedSources[0]: must be a CIDR such as 10.0.0.0/8 or fd00::/8',
      '',
      'Pending 1, Invalid 2',
      '',
    ]);
  });

  it('prints one JSON line per problem when it appears, not again while it stays', () => {
    let problems = ['broken.yaml: spec.port: must be >= 1'];
    const store = Object.assign(new MemoryStore(), { problems: () => problems });
    const operator = new Operator({ store, providers: new ProviderSet() });
    const out = capture();
    const view = startStatusView(store, 'json', operator);
    view.stop();
    problems = [
      'broken.yaml: spec.port: must be >= 1',
      'b.yaml: spec: must have required property',
    ];
    view.stop();
    const lines = out.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.phase, l.source, l.problem])).toEqual([
      ['Invalid', 'broken.yaml', 'spec.port: must be >= 1'],
      ['Invalid', 'b.yaml', 'spec: must have required property'],
    ]);
  });
});

describe('the JSON status lines', () => {
  it('print every status written, even one the next write replaces before a poll', async () => {
    const store = new MemoryStore();
    store.apply('default', 'web', spec({ provider: 'lab' }));
    const operator = new Operator({ store, providers: new ProviderSet() });
    const out = capture();
    const view = startStatusView(store, 'json', operator);
    // Two writes in a row, well within the 100 ms poll: the first would be lost to a poll.
    await operator.store.updateStatus('default/web', {
      phase: 'Replacing',
      instanceState: 'Preempted',
    });
    await operator.store.updateStatus('default/web', { phase: 'Provisioning' });
    view.stop();
    const states = out
      .map((l) => JSON.parse(l) as { phase?: string; state?: string })
      .map((l) => `${l.phase}/${l.state ?? ''}`);
    expect(states).toEqual(['Pending/', 'Replacing/Preempted', 'Provisioning/']);
  });
});
