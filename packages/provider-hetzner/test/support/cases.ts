// Test support (not a test file): the classify table's rows, from the captured and documented
// answers in test/fixtures/api, each as the provider meets it: the status, headers and body read
// by the client's own answer reader into a HetznerApiError; then a request with no answer and a
// token file that cannot be read.
import { readFileSync } from 'node:fs';
import type { ErrorClass, Operation } from '@proxy-op/contract';
import type { ClassifyCase } from '@proxy-op/providertest';
import { apiErrorOf, rateLimitOf } from '../../src/client.js';
import { TokenError, TransportError } from '../../src/errors.js';

/** One error answer of the API. */
export interface ErrorFixture {
  readonly name: string;
  readonly op: Operation;
  readonly source: string;
  readonly httpStatus: number;
  readonly want: ErrorClass;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body: { error: { code: string; message: string; details?: Record<string, unknown> } };
}

export const errorFixtures = JSON.parse(
  readFileSync(new URL('../fixtures/api/errors.json', import.meta.url), 'utf8'),
) as ErrorFixture[];

/** The fixture's answer as the client reads it. */
export function fixtureError(f: ErrorFixture, request = 'GET /servers') {
  const headers = new Headers(f.headers ?? {});
  return apiErrorOf(request, f.httpStatus, '', JSON.stringify(f.body), rateLimitOf(headers));
}

const refused = Object.assign(new TypeError('fetch failed'), {
  cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:443'), { code: 'ECONNREFUSED' }),
});

export const classifyCases: ClassifyCase[] = [
  ...errorFixtures.map((f) => ({ name: f.name, op: f.op, error: fixtureError(f), want: f.want })),
  {
    name: '502 from a proxy in front of the API (HTML)',
    op: 'get',
    error: apiErrorOf('GET /servers', 502, 'Bad Gateway', '<html>502</html>', undefined),
    want: 'Transient',
  },
  {
    name: 'no answer: connection refused',
    op: 'list',
    error: new TransportError('GET /servers', 'ECONNREFUSED', refused),
    want: 'Transient',
  },
  {
    name: 'the token file is missing',
    op: 'create',
    error: new TokenError('/etc/proxy-operator/hetzner/token', 'does not exist'),
    want: 'Transient',
  },
];
