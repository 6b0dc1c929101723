/**
 * What a probe sends and reads of the target: a fresh nonce in the URL's
 * query, and the answer, which must be the whoami target's JSON with that
 * very nonce (a cache or a captive portal cannot pass); the proxy's and the
 * target's statuses in words.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { AnswerHead } from './http.js';
import { normalAddress, PROBE_DEFAULTS } from './types.js';

/** A fresh nonce (hex). */
export function nonce(): string {
  return randomBytes(PROBE_DEFAULTS.nonceBytes).toString('hex');
}

/** `url` with `?nonce=n`. */
export function withNonce(url: URL, n: string): URL {
  const u = new URL(url);
  u.searchParams.set('nonce', n);
  return u;
}

/** `403 Forbidden`. */
export function statusText(head: AnswerHead): string {
  return `${head.status}${head.reason === '' ? '' : ` ${head.reason}`}`;
}

/** A status other than 200 from `who`, in words (a 407 named as asking for credentials). */
export function refusal(head: AnswerHead, who: string): string {
  if (head.status === 407) return `${who} asks for credentials (${statusText(head)})`;
  return `${who} answered ${statusText(head)}`;
}

/** Reads the target's answer: passed when it carries the nonce `sent`, with the address it saw. */
export function readAnswer(
  body: Buffer,
  sent: string,
): { ok: boolean; message: string; egress?: string | undefined } {
  let answer: { nonce?: unknown; source?: unknown } | null | undefined;
  try {
    answer = JSON.parse(body.toString('utf8')) as typeof answer;
  } catch {
    answer = undefined;
  }
  if (answer === null || typeof answer !== 'object' || typeof answer.nonce !== 'string') {
    return {
      ok: false,
      message: 'the answer is not the whoami target’s (no nonce in it): another server answered',
    };
  }
  if (answer.nonce !== sent) {
    return {
      ok: false,
      message:
        'the answer carries another nonce than the one sent: a cache or another server answered',
    };
  }
  const egress = normalAddress(answer.source);
  return {
    ok: true,
    message: `the target echoed the nonce; it saw ${egress ?? 'no address'}`,
    egress,
  };
}
