/**
 * The server's TLS: a fresh CA and a loopback serving certificate it
 * signed, made with the `openssl` CLI once per process.
 *
 * @module
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** A CA and a serving certificate it signed, PEM encoded. */
export interface ServingCertificates {
  /** The CA certificate clients trust (kubeconfig `certificate-authority-data`). */
  readonly ca: string;
  /** The server's certificate, for `127.0.0.1` and `localhost`. */
  readonly cert: string;
  readonly key: string;
}

let cached: Promise<ServingCertificates> | undefined;

/**
 * A fresh CA and a loopback serving certificate, made once per process with
 * the `openssl` CLI (P-256 keys, valid for one day) in a temp folder that is
 * removed again.
 */
export function servingCertificates(): Promise<ServingCertificates> {
  cached ??= generate().catch((e: unknown) => {
    cached = undefined;
    throw e;
  });
  return cached;
}

async function generate(): Promise<ServingCertificates> {
  const run = promisify(execFile);
  const dir = await mkdtemp(join(tmpdir(), 'kube-testserver-tls-'));
  const f = (n: string) => join(dir, n);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  try {
    await run('openssl', [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      f('ca.key'),
      '-out',
      f('ca.crt'),
      '-days',
      '1',
      '-subj',
      '/CN=kube-testserver-ca',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    await run('openssl', [
      'req',
      ...ec,
      '-keyout',
      f('server.key'),
      '-out',
      f('server.csr'),
      '-subj',
      '/CN=kube-apiserver',
    ]);
    await writeFile(
      f('ext.cnf'),
      'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n',
    );
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      f('server.csr'),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-out',
      f('server.crt'),
      '-days',
      '1',
      '-extfile',
      f('ext.cnf'),
    ]);
    return {
      ca: await readFile(f('ca.crt'), 'utf8'),
      cert: await readFile(f('server.crt'), 'utf8'),
      key: await readFile(f('server.key'), 'utf8'),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
