// Test support (not a test file): the double's check of a request's Signature Version 4
// (`AWS4-HMAC-SHA256`), recomputed from the canonical request with the secret key the double
// holds for the access key the request names, as EC2 checks it: the credential scope must name
// the double's region and `ec2`, the signed headers must include `host` and `x-amz-date`, and a
// temporary credential's session token must be the one issued with it.
import { createHash, createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Ec2Fault } from './wire.js';

/** A credential the double accepts. */
export interface DoubleCredential {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Present for temporary credentials: the token the request must carry. */
  readonly sessionToken?: string;
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) =>
  createHmac('sha256', key).update(data).digest();

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

function authFailure(): Ec2Fault {
  return new Ec2Fault(
    401,
    'AuthFailure',
    'AWS was not able to validate the provided access credentials',
  );
}

/**
 * Checks the request's signature; resolves with the credential it was signed
 * with, or throws the fault EC2 answers. `echo` makes a refusal name the
 * session token presented, as a careless server would (leak tests).
 */
export function verifySignature(
  req: { method: string; path: string; headers: IncomingHttpHeaders; body: Buffer },
  accepted: ReadonlyMap<string, DoubleCredential>,
  region: string,
  echo: boolean,
): DoubleCredential {
  const auth = header(req.headers, 'authorization');
  if (auth === undefined) {
    throw new Ec2Fault(
      401,
      'MissingAuthenticationToken',
      'Request is missing Authentication Token',
    );
  }
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
      auth,
    );
  if (m === null) {
    throw new Ec2Fault(
      400,
      'IncompleteSignature',
      'The request signature does not conform to AWS standards.',
    );
  }
  const [, keyId = '', date = '', scopeRegion = '', service = '', signed = '', signature = ''] = m;
  const token = header(req.headers, 'x-amz-security-token');
  const cred = accepted.get(keyId);
  if (cred === undefined || (cred.sessionToken ?? undefined) !== (token ?? undefined)) {
    if (echo && token !== undefined) {
      throw new Ec2Fault(
        401,
        'AuthFailure',
        `The security token included in the request is invalid: ${token}`,
      );
    }
    throw authFailure();
  }
  if (scopeRegion !== region || service !== 'ec2') {
    throw new Ec2Fault(
      401,
      'AuthFailure',
      `Credential should be scoped to a valid region, not '${scopeRegion}'. `,
    );
  }
  const amzDate = header(req.headers, 'x-amz-date') ?? '';
  const names = signed.split(';');
  if (!names.includes('host') || !names.includes('x-amz-date') || !amzDate.startsWith(date)) {
    throw authFailure();
  }
  const canonicalHeaders = names
    .map((n) => `${n}:${(header(req.headers, n) ?? '').trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const [path = '/', query = ''] = req.path.split('?');
  const canonicalQuery = [...new URLSearchParams(query)]
    .map(([k, v]) => [encodeURIComponent(k), encodeURIComponent(v)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonical = [
    req.method,
    path,
    canonicalQuery,
    canonicalHeaders,
    signed,
    header(req.headers, 'x-amz-content-sha256') ?? sha256(req.body),
  ].join('\n');
  const scope = `${date}/${scopeRegion}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const key = hmac(
    hmac(hmac(hmac(`AWS4${cred.secretAccessKey}`, date), scopeRegion), service),
    'aws4_request',
  );
  if (hmac(key, toSign).toString('hex') !== signature) {
    throw authFailure();
  }
  return cred;
}
