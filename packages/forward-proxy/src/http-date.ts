/**
 * The times the proxy writes: the `Date` field of its own answers
 * (computed once a second) and the access log's ISO 8601 stamps. Both are
 * put together from a `Date`'s UTC fields: `toUTCString()` and
 * `toISOString()` give the same text, but their first call reads about
 * half a MiB of ICU's data tables into the process, for nothing.
 *
 * @module
 */

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const three = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);
/** A year of 0 to 9999 as four digits; others as `toISOString()` writes them (±YYYYYY). */
const year = (y: number) =>
  y >= 0 && y <= 9999
    ? `${y}`.padStart(4, '0')
    : `${y < 0 ? '-' : '+'}${`${Math.abs(y)}`.padStart(6, '0')}`;

/** `ms` (since the epoch) as `toISOString()` writes it: `2026-12-07T01:02:03.456Z`. */
export function isoTime(ms: number = Date.now()): string {
  const d = new Date(ms);
  return (
    `${year(d.getUTCFullYear())}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}` +
    `T${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}` +
    `.${three(d.getUTCMilliseconds())}Z`
  );
}

/** `ms` as an HTTP date (RFC 9110 §5.6.7), as `toUTCString()` writes it for years 0 to 9999. */
export function formatHttpDate(ms: number): string {
  const d = new Date(ms);
  return (
    `${DAYS[d.getUTCDay()]}, ${two(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ` +
    `${`${d.getUTCFullYear()}`.padStart(4, '0')} ${two(d.getUTCHours())}:` +
    `${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} GMT`
  );
}

let dateSecond = 0;
let dateText = '';

/** The current time as an HTTP date, computed once a second. */
export function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = formatHttpDate(now);
  }
  return dateText;
}
