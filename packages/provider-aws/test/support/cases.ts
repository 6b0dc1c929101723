// Test support (not a test file): the classify table's rows, from the documented answers in
// test/fixtures/ec2, each as the provider meets it: an EC2 error answer turned into the
// adapter's Ec2ApiError the way the SDK's error is (test/wire.test.ts proves the same answers
// through the real client), a call that got no answer, a credentials failure.
import { readFileSync } from 'node:fs';
import type { ErrorClass, Operation } from '@proxy-op/contract';
import type { ClassifyCase } from '@proxy-op/providertest';
import { toBackendError } from '../../src/answers.js';
import { CredentialsError, Ec2ApiError } from '../../src/errors.js';

/** One error answer of EC2. */
export interface ErrorFixture {
  readonly name: string;
  readonly op: Operation;
  readonly action: string;
  readonly httpStatus: number;
  readonly code: string;
  readonly message: string;
  readonly want: ErrorClass;
  readonly source: string;
}

export const errorFixtures = JSON.parse(
  readFileSync(new URL('../fixtures/ec2/errors.json', import.meta.url), 'utf8'),
) as ErrorFixture[];

/** The error the SDK throws for an EC2 error answer (its observed shape: name, message, $fault, $metadata). */
export function sdkError(httpStatus: number, code: string, message: string): Error {
  const e = new Error(message) as Error & Record<string, unknown>;
  e.name = code;
  e.$fault = httpStatus >= 500 ? 'server' : 'client';
  e.$metadata = {
    httpStatusCode: httpStatus,
    requestId: 'f6b5d4c3-2a19-4e8d-9c7b-6a5f4e3d2c1b',
    attempts: 1,
  };
  return e;
}

export const classifyCases: ClassifyCase[] = [
  ...errorFixtures.map((f) => ({
    name: f.name,
    op: f.op,
    error: toBackendError(
      f.action,
      sdkError(f.httpStatus, f.code, f.message),
      'ec2.eu-central-1.amazonaws.com',
    ),
    want: f.want,
  })),
  {
    name: 'connection refused (no answer)',
    op: 'list',
    error: new Ec2ApiError({
      action: 'DescribeInstances',
      ec2Code: 'ECONNREFUSED',
      message: 'ec2:DescribeInstances: no answer from http://127.0.0.1:1 (ECONNREFUSED)',
    }),
    want: 'Transient',
  },
  {
    name: 'no credentials found',
    op: 'create',
    error: new CredentialsError('missing', 'no AWS credentials found'),
    want: 'Transient',
  },
  {
    name: 'a credentials file without keys',
    op: 'create',
    error: new CredentialsError('invalid', 'the credentials file has no profile "default"'),
    want: 'Permanent',
  },
];
