// The Proxies table: filtered by text, provider and phase, sorted by any column, a page of
// rows at a time (so a thousand Proxies stay a few hundred elements); each Proxy's name
// opens its detail. At narrow widths the style sheet lays each row out as a card.
import type { PagePhase, ProxyRow } from '../../src/page/wire.js';
import { Sparkline } from './charts.js';
import { age, PHASE_SYMBOL, PHASES } from './format.js';

/** What the table shows: the filters, the sort and the page. */
export interface TableView {
  readonly text: string;
  readonly provider: string;
  readonly phase: PagePhase | '';
  readonly sort: Column;
  readonly descending: boolean;
  readonly page: number;
}

/** The first view: everything, by name. */
export const FIRST_VIEW: TableView = {
  text: '',
  provider: '',
  phase: '',
  sort: 'name',
  descending: false,
  page: 0,
};

/** Rows per page. */
export const PAGE_SIZE = 50;

type Column =
  | 'name'
  | 'namespace'
  | 'provider'
  | 'phase'
  | 'endpoint'
  | 'egress'
  | 'age'
  | 'probe'
  | 'error';

const COLUMNS: ReadonlyArray<readonly [Column, string]> = [
  ['name', 'Name'],
  ['namespace', 'Namespace'],
  ['provider', 'Provider'],
  ['phase', 'Phase'],
  ['endpoint', 'Endpoint'],
  ['egress', 'Egress IP'],
  ['age', 'Age'],
  ['probe', 'Last probe'],
  ['error', 'Last error'],
];

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });
const VERDICT_ORDER = ['failing', 'starting', 'passing', 'no target', 'off'];

function lastMs(r: ProxyRow): number {
  const v = r.probe?.spark.at(-1);
  return v === null || v === undefined ? Number.POSITIVE_INFINITY : v;
}

function compare(a: ProxyRow, b: ProxyRow, c: Column): number {
  switch (c) {
    case 'phase':
      return PHASES.indexOf(a.phase) - PHASES.indexOf(b.phase);
    case 'age':
      // Oldest first, as ascending ages read.
      return Date.parse(a.created) - Date.parse(b.created);
    case 'probe':
      return (
        VERDICT_ORDER.indexOf(a.probe?.verdict ?? 'off') -
          VERDICT_ORDER.indexOf(b.probe?.verdict ?? 'off') || lastMs(a) - lastMs(b)
      );
    default: {
      const v = (r: ProxyRow) =>
        c === 'egress'
          ? (r.egressIP ?? '')
          : c === 'error'
            ? (r.error?.message ?? '')
            : c === 'endpoint'
              ? (r.endpoint ?? r.secret ?? '')
              : r[c];
      return collator.compare(v(a), v(b));
    }
  }
}

/** The rows the view selects, sorted (a tie broken by key, both ways). */
export function selectRows(rows: Iterable<ProxyRow>, v: TableView): ProxyRow[] {
  const text = v.text.trim().toLowerCase();
  const out: ProxyRow[] = [];
  for (const r of rows) {
    if (v.provider !== '' && r.provider !== v.provider) continue;
    if (v.phase !== '' && r.phase !== v.phase) continue;
    if (
      text !== '' &&
      ![r.key, r.endpoint, r.egressIP, r.error?.message, r.probe?.text, r.phase]
        .join(' ')
        .toLowerCase()
        .includes(text)
    ) {
      continue;
    }
    out.push(r);
  }
  const sign = v.descending ? -1 : 1;
  return out.sort((a, b) => sign * (compare(a, b, v.sort) || collator.compare(a.key, b.key)));
}

/** A phase in words, its symbol and its colour. */
export function PhaseBadge({ phase }: { phase: PagePhase }) {
  return (
    <span class={`phase phase-${phase.toLowerCase()}`}>
      <span aria-hidden="true">{PHASE_SYMBOL[phase]}</span> {phase}
    </span>
  );
}

function Row({ r, now }: { r: ProxyRow; now: number }) {
  const href = `#/proxies/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}`;
  return (
    <tr data-key={r.key}>
      <td data-label="Name">
        <a class="row-link" href={href}>
          {r.name}
        </a>
      </td>
      <td data-label="Namespace">{r.namespace}</td>
      <td data-label="Provider">{r.provider}</td>
      <td data-label="Phase">
        <PhaseBadge phase={r.phase} />
      </td>
      <td data-label="Endpoint" class="mono">
        {r.endpoint ?? null}
        {r.secret === undefined ? null : <span class="muted">{` (credentials: ${r.secret})`}</span>}
      </td>
      <td data-label="Egress IP" class="mono">
        {r.egressIP ?? null}
      </td>
      <td data-label="Age">{age(r.created, now)}</td>
      <td
        data-label="Last probe"
        class={`probe probe-${(r.probe?.verdict ?? 'none').replace(' ', '-')}`}
      >
        {r.probe === undefined ? null : (
          <>
            <span class="probe-text">{r.probe.text}</span>
            {r.probe.spark.length > 0 ? <Sparkline values={r.probe.spark} /> : null}
            {r.probe.failure === undefined ? null : (
              <span class="probe-failure">{r.probe.failure}</span>
            )}
          </>
        )}
      </td>
      <td data-label="Last error" class="error">
        {r.error === undefined ? null : `${r.error.class}: ${r.error.message}`}
      </td>
    </tr>
  );
}

/** The filters, the table and the pager. */
export function ProxiesTable(props: {
  rows: readonly ProxyRow[];
  providers: readonly string[];
  total: number;
  view: TableView;
  onView: (v: TableView) => void;
  now: number;
}) {
  const { rows, view, onView, now } = props;
  const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
  const page = Math.min(view.page, pages - 1);
  const shown = rows.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE);
  const set = (patch: Partial<TableView>) => onView({ ...view, page: 0, ...patch });
  const first = rows.length === 0 ? 0 : page * PAGE_SIZE + 1;
  const range = `${first}–${page * PAGE_SIZE + shown.length} of ${rows.length}`;
  return (
    <>
      <search class="filters" aria-label="Filter the Proxies">
        <div class="field">
          <label for="filter-text">Filter</label>
          <input
            id="filter-text"
            type="search"
            placeholder="name, address, error…"
            value={view.text}
            onInput={(e) => set({ text: e.currentTarget.value })}
          />
        </div>
        <div class="field">
          <label for="filter-provider">Provider</label>
          <select
            id="filter-provider"
            value={view.provider}
            onChange={(e) => set({ provider: e.currentTarget.value })}
          >
            <option value="">All providers</option>
            {props.providers.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="filter-phase">Phase</label>
          <select
            id="filter-phase"
            value={view.phase}
            onChange={(e) => set({ phase: e.currentTarget.value as PagePhase | '' })}
          >
            <option value="">All phases</option>
            {PHASES.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </div>
      </search>
      <div class="table-wrap">
        <table class="proxies">
          <caption>
            {rows.length === props.total
              ? `${props.total} ${props.total === 1 ? 'Proxy' : 'Proxies'}`
              : `${rows.length} of ${props.total} Proxies match`}
          </caption>
          <thead>
            <tr>
              {COLUMNS.map(([c, label]) => {
                const active = view.sort === c;
                const sort = active ? (view.descending ? 'descending' : 'ascending') : 'none';
                return (
                  <th key={c} scope="col" aria-sort={sort}>
                    <button
                      type="button"
                      class="sort"
                      onClick={() =>
                        set({ sort: c, descending: active ? !view.descending : false })
                      }
                    >
                      {label}
                      <span class="sort-mark" aria-hidden="true">
                        {active ? (view.descending ? ' ▼' : ' ▲') : ''}
                      </span>
                    </button>
                  </th>
                );
              })}
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <Row key={r.key} r={r} now={now} />
            ))}
          </tbody>
        </table>
        {rows.length === 0 ? <p class="empty">No Proxies to show.</p> : null}
      </div>
      {pages > 1 ? (
        <nav class="pager" aria-label="Pages of the table">
          <button
            type="button"
            disabled={page === 0}
            onClick={() => onView({ ...view, page: page - 1 })}
          >
            Previous page
          </button>
          <span aria-live="polite">{range}</span>
          <button
            type="button"
            disabled={page >= pages - 1}
            onClick={() => onView({ ...view, page: page + 1 })}
          >
            Next page
          </button>
        </nav>
      ) : null}
    </>
  );
}
