/**
 * Response writing: the headers every answer carries, JSON bodies with
 * `Warning` headers, error Statuses, and the plain-text pages (the
 * real server's `handlers/responsewriters`).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { internalError, StatusError } from '../errors.js';
import type { JsonValue } from '../json.js';

/** The headers on every answer: a fresh `Audit-Id`, and no caching. */
export function commonHeaders(): Record<string, string> {
  return { 'Audit-Id': randomUUID(), 'Cache-Control': 'no-cache, private' };
}

/** Writes a JSON body; each warning becomes a `Warning: 299 - "..."` header. */
export function writeJson(
  res: ServerResponse,
  code: number,
  body: JsonValue,
  headers: Record<string, string> = {},
  warnings: readonly string[] = [],
): void {
  const text = JSON.stringify(body);
  const h: Record<string, string | string[]> = {
    ...commonHeaders(),
    'Content-Type': 'application/json',
    ...headers,
  };
  if (warnings.length > 0) h.Warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
  res.writeHead(code, h);
  res.end(text);
}

/**
 * Writes an error as its Status (anything that is not a {@link StatusError}
 * as a 500), or drops the connection when the headers are already out.
 */
export function writeError(res: ServerResponse, e: unknown): void {
  const err =
    e instanceof StatusError ? e : internalError(e instanceof Error ? e.message : String(e));
  if (res.headersSent) {
    res.destroy();
    return;
  }
  writeJson(res, err.code, err.status as unknown as JsonValue, {
    ...err.headers,
    'X-Content-Type-Options': 'nosniff',
  });
}

/** Writes a plain-text answer, as the health checks and the 404 page are. */
export function writeText(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, {
    ...commonHeaders(),
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(text);
}

/** The real server's answer to a path nothing serves. */
export function writeNotFoundPage(res: ServerResponse): void {
  writeText(res, 404, '404 page not found\n');
}
