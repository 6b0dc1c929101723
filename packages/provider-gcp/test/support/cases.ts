// Test support (not a test file): the classify table's rows, from the captured and documented
// answers in test/fixtures/compute, each as the provider meets it: an API error body turned
// into the adapter's ComputeApiError the way the SDK's error is (test/wire.test.ts proves the
// same bodies through the real client), a failed operation, a credentials or transport failure.
import { readFileSync } from 'node:fs';
import type { ErrorClass, Operation } from '@proxy-op/contract';
import type { ClassifyCase } from '@proxy-op/providertest';
import { operationView } from '../../src/answers.js';
import { ComputeApiError, CredentialsError, OperationFailedError } from '../../src/errors.js';
import { translate } from '../../src/translate.js';

const dir = new URL('../fixtures/compute/', import.meta.url);

/** One error answer of the API. */
export interface ErrorFixture {
  readonly name: string;
  readonly op: Operation;
  readonly source: string;
  readonly httpStatus: number;
  readonly want: ErrorClass;
  readonly body: { error: { code: number; message: string } };
}

/** One failed operation of the API. */
export interface OperationFixture {
  readonly name: string;
  readonly source: string;
  readonly want: ErrorClass;
  readonly operation: Record<string, unknown>;
}

export const errorFixtures = JSON.parse(
  readFileSync(new URL('errors.json', dir), 'utf8'),
) as ErrorFixture[];
export const operationFixtures = JSON.parse(
  readFileSync(new URL('operation-failures.json', dir), 'utf8'),
) as OperationFixture[];

const RAW_PAYLOAD = Symbol.for('google-gax.rawHttpResponsePayload');

/** The error object the SDK's REST transport throws for an HTTP error answer (its observed shape). */
export function sdkError(httpStatus: number, body: unknown): Error {
  const e = new Error(String((body as { error?: { message?: unknown } }).error?.message)) as Error &
    Record<PropertyKey, unknown>;
  e.code = httpStatus === 404 ? 5 : httpStatus === 403 ? 7 : httpStatus === 401 ? 16 : 2;
  e.httpStatusCode = httpStatus;
  Object.defineProperty(e, RAW_PAYLOAD, { value: JSON.stringify(body), enumerable: false });
  return e;
}

export const classifyCases: ClassifyCase[] = [
  ...errorFixtures.map((f) => ({
    name: f.name,
    op: f.op,
    error: translate(sdkError(f.httpStatus, f.body), 30_000),
    want: f.want,
  })),
  ...operationFixtures.map((f) => ({
    name: f.name,
    op: 'get' as const,
    error: new OperationFailedError('the insert', operationView(f.operation, 'fixture')),
    want: f.want,
  })),
  {
    name: 'connection refused (no answer)',
    op: 'list',
    error: new ComputeApiError({
      message: 'request to http://127.0.0.1:1/ failed, reason: connect ECONNREFUSED',
      grpcCode: 14,
    }),
    want: 'Transient',
  },
  {
    name: 'no answer within the budget',
    op: 'get',
    error: new ComputeApiError({ message: 'no answer within 30000 ms', grpcCode: 4 }),
    want: 'Transient',
  },
  {
    name: 'no credentials found',
    op: 'create',
    error: new CredentialsError('missing', 'no Google credentials found'),
    want: 'Transient',
  },
  {
    name: 'a key file that cannot be used',
    op: 'create',
    error: new CredentialsError(
      'invalid',
      'the Google credentials could not be used to get a token',
    ),
    want: 'Permanent',
  },
];
