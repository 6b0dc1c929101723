// The overview: a section per kind of thing the operator runs, in order. Today the providers
// (each one's health, with every target's reason, and its Proxies counted by phase); a pools
// section joins the list once ProxyPool exists.
import type { FunctionComponent } from 'preact';
import type { ProviderView, ProxyRow } from '../../src/page/wire.js';
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

/** The sections, in the order shown; a pools section goes after the providers. */
const SECTIONS: readonly Section[] = [{ id: 'providers', title: 'Providers', body: Providers }];

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
