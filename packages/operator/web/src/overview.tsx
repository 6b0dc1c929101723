// The overview: a section per kind of thing the operator runs, in order: the providers (each
// one's health, with every target's reason, and its Proxies counted by phase), then the pools
// (desired, ready, up to date and available, the rollout, rotation and remediation state).
import type { FunctionComponent } from 'preact';
import type { PoolState, PoolView, ProviderView, ProxyRow } from '../../src/page/wire.js';
import { PHASE_SYMBOL, phaseCounts, when } from './format.js';
import type { LiveState } from './live.js';

/** One section of the overview. */
interface Section {
  readonly id: string;
  readonly title: string;
  readonly body: FunctionComponent<{ state: LiveState; now: number }>;
}

function Health({ p }: { p: ProviderView }) {
  if (!p.configured) return <span class="badge badge-bad">✕ not configured</span>;
  if (p.health === undefined) return <span class="badge badge-unknown">? not checked</span>;
  return p.health.ready ? (
    <span class="badge badge-ok">✓ healthy</span>
  ) : (
    <span class="badge badge-bad">✕ unhealthy</span>
  );
}

function ProviderCard({ p, proxies, now }: { p: ProviderView; proxies: ProxyRow[]; now: number }) {
  const counts = phaseCounts(proxies.map((r) => r.phase));
  return (
    <article class="card" aria-labelledby={`provider-${p.name}`}>
      <header class="card-head">
        <h3 id={`provider-${p.name}`}>{p.name}</h3>
        {p.type === undefined ? null : <span class="muted">{p.type}</span>}
        <Health p={p} />
      </header>
      <p class="counts">
        {proxies.length === 0 ? (
          <span class="muted">no Proxies</span>
        ) : (
          <>
            <span class="count-total">{`${proxies.length} ${proxies.length === 1 ? 'Proxy' : 'Proxies'}`}</span>
            {counts.map(([phase, n]) => (
              <span key={phase} class={`count phase-${phase.toLowerCase()}`}>
                <span aria-hidden="true">{PHASE_SYMBOL[phase]}</span> {`${phase} ${n}`}
              </span>
            ))}
          </>
        )}
      </p>
      {p.health === undefined || p.health.targets.length === 0 ? null : (
        <ul class="targets">
          {p.health.targets.map((t) => (
            <li key={t.target} class={t.ready ? 'target' : 'target target-bad'}>
              <span class="target-name">
                <span aria-hidden="true">{t.ready ? '✓ ' : '✕ '}</span>
                {t.target}
              </span>{' '}
              <span class="muted">{t.address}</span> <span>{`${t.reason}: ${t.message}`}</span>
            </li>
          ))}
        </ul>
      )}
      {p.health?.lastCheckTime === undefined ? null : (
        <p class="muted small">{`checked ${when(p.health.lastCheckTime, now)}`}</p>
      )}
    </article>
  );
}

function Providers({ state, now }: { state: LiveState; now: number }) {
  const byProvider = new Map<string, ProxyRow[]>();
  for (const r of state.proxies.values()) {
    const list = byProvider.get(r.provider) ?? [];
    list.push(r);
    byProvider.set(r.provider, list);
  }
  const providers = [...state.providers.values()];
  if (providers.length === 0) return <p class="muted">No providers.</p>;
  return (
    <div class="cards">
      {providers.map((p) => (
        <ProviderCard key={p.name} p={p} proxies={byProvider.get(p.name) ?? []} now={now} />
      ))}
    </div>
  );
}

/** A pool condition as a line: its words, marked bad when `bad` says so. */
function PoolLine({ label, c, bad }: { label: string; c: PoolState | undefined; bad: boolean }) {
  if (c === undefined) return null;
  return (
    <li class={bad ? 'target target-bad' : 'target'}>
      <span class="target-name">
        <span aria-hidden="true">{bad ? '✕ ' : '✓ '}</span>
        {label}
      </span>{' '}
      <span>{`${c.reason}: ${c.message}`}</span>
    </li>
  );
}

function PoolCard({ p }: { p: PoolView }) {
  const short = p.available < p.desired;
  return (
    <article class="card" aria-labelledby={`pool-${p.key}`} data-pool={p.key}>
      <header class="card-head">
        <h3 id={`pool-${p.key}`}>{p.key}</h3>
        <span class="muted">{p.providers.join(', ')}</span>
        {p.paused ? (
          <span class="badge badge-unknown">paused</span>
        ) : short ? (
          <span class="badge badge-bad">{`✕ ${p.available} of ${p.desired} available`}</span>
        ) : (
          <span class="badge badge-ok">{`✓ ${p.available} of ${p.desired} available`}</span>
        )}
      </header>
      <p class="counts pool-counts">
        <span class="count">{`desired ${p.desired}`}</span>
        <span class="count">{`ready ${p.ready}`}</span>
        <span class="count">{`up to date ${p.updated}`}</span>
        <span class="count">{`available ${p.available}`}</span>
        <span class="count">{`endpoints ${p.endpoints}`}</span>
        {p.draining === 0 ? null : <span class="count">{`draining ${p.draining}`}</span>}
        {p.rotateEvery === undefined ? null : (
          <span class="count">{`rotates every ${p.rotateEvery}`}</span>
        )}
      </p>
      <ul class="targets">
        <PoolLine label="rollout" c={p.progressing} bad={false} />
        <PoolLine label="remediation" c={p.remediation} bad={p.remediation?.status === 'False'} />
        <PoolLine label="spread" c={p.spreadDegraded} bad={true} />
      </ul>
    </article>
  );
}

function Pools({ state }: { state: LiveState; now: number }) {
  const pools = [...state.pools.values()].sort((a, b) => a.key.localeCompare(b.key));
  if (pools.length === 0) return <p class="muted">No ProxyPools.</p>;
  return (
    <div class="cards pools">
      {pools.map((p) => (
        <PoolCard key={p.key} p={p} />
      ))}
    </div>
  );
}

/** The sections, in the order shown. */
const SECTIONS: readonly Section[] = [
  { id: 'providers', title: 'Providers', body: Providers },
  { id: 'pools', title: 'ProxyPools', body: Pools },
];

/** Every Proxy counted by phase, in one line. */
function Summary({ state }: { state: LiveState }) {
  const rows = [...state.proxies.values()];
  return (
    <p class="counts summary">
      <span class="count-total">{`${rows.length} ${rows.length === 1 ? 'Proxy' : 'Proxies'}`}</span>
      {phaseCounts(rows.map((r) => r.phase)).map(([phase, n]) => (
        <span key={phase} class={`count phase-${phase.toLowerCase()}`}>
          <span aria-hidden="true">{PHASE_SYMBOL[phase]}</span> {`${phase} ${n}`}
        </span>
      ))}
    </p>
  );
}

/** The overview, and the objects the operator cannot reconcile. */
export function Overview({ state, now }: { state: LiveState; now: number }) {
  return (
    <>
      <Summary state={state} />
      {SECTIONS.map((s) => (
        <section key={s.id} aria-labelledby={`h-${s.id}`}>
          <h2 id={`h-${s.id}`}>{s.title}</h2>
          <s.body state={state} now={now} />
        </section>
      ))}
      {state.problems.length === 0 ? null : (
        <section aria-labelledby="h-problems">
          <h2 id="h-problems">Not reconciled</h2>
          <ul class="problems">
            {state.problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        </section>
      )}
    </>
  );
}
