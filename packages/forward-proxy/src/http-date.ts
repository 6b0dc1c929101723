/**
 * The `Date` field value of the proxy's own answers, computed once a second.
 *
 * @module
 */

let dateSecond = 0;
let dateText = '';

/** The current time as an HTTP date, computed once a second. */
export function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}
