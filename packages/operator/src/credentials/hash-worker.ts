/**
 * The worker thread that hashes password-file lines (SHA-512-crypt) for
 * the operator, so a thousand new credentials do not hold its event loop.
 *
 * @module
 */
import { parentPort } from 'node:worker_threads';
import { hashPassword } from '@proxy-op/htpasswd';

/** One line to hash. */
export interface HashJob {
  readonly id: number;
  readonly password: string;
  readonly salt: string;
  readonly rounds: number | undefined;
}

parentPort?.on('message', (job: HashJob) => {
  parentPort?.postMessage({
    id: job.id,
    hash: hashPassword(job.password, { salt: job.salt, rounds: job.rounds }),
  });
});
