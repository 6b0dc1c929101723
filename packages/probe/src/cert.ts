/**
 * A self-signed certificate made in memory, for the whoami target's HTTPS
 * listener when it is given none: an ECDSA P-256 key and an X.509 v3
 * certificate (DER written here, signed with `node:crypto`) naming the
 * target's host names and addresses, valid for a year. Nothing is written
 * to disk and no `openssl` is needed.
 *
 * @module
 */
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';

/** A certificate and its key, PEM, with the certificate's SHA-256 fingerprint. */
export interface SelfSignedCertificate {
  /** The certificate, PEM. */
  readonly cert: string;
  /** The private key, PEM (PKCS #8). */
  readonly key: string;
  /** SHA-256 of the DER certificate, as `AB:CD:...` (the form `tls` reports). */
  readonly fingerprint256: string;
}

// ---- DER, the little of it a certificate needs ----

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
}

const seq = (...parts: Buffer[]) => tlv(0x30, Buffer.concat(parts));
const set = (...parts: Buffer[]) => tlv(0x31, Buffer.concat(parts));

function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const out = [40 * a + b];
  for (const n of rest) {
    const groups: number[] = [];
    for (let v = n; ; v = Math.floor(v / 128)) {
      groups.unshift(v % 128);
      if (v < 128) break;
    }
    for (let i = 0; i < groups.length - 1; i++) groups[i] = (groups[i] as number) | 0x80;
    out.push(...groups);
  }
  return tlv(0x06, Buffer.from(out));
}

function positiveInteger(bytes: Buffer): Buffer {
  const body = (bytes[0] as number) & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes;
  return tlv(0x02, body);
}

/** UTCTime for years before 2050, GeneralizedTime after (RFC 5280, 4.1.2.5). */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return d.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`))
    : tlv(0x18, Buffer.from(`${iso}Z`));
}

const name = (cn: string) => seq(set(seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(cn, 'utf8')))));

function ipBytes(address: string): Buffer {
  if (isIP(address) === 4) return Buffer.from(address.split('.').map(Number));
  const [head = '', tail] = address.split('::');
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const out = Buffer.alloc(16);
  all.forEach((g, i) => {
    out.writeUInt16BE(Number.parseInt(g, 16), i * 2);
  });
  return out;
}

const ECDSA_WITH_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

/**
 * Makes a self-signed certificate for `names` (host names and IP
 * addresses, each a subjectAltName; the first is also the subject's
 * common name), valid from an hour ago for `days` days.
 */
export function selfSignedCertificate(
  names: readonly string[],
  opts: { days?: number } = {},
): SelfSignedCertificate {
  if (names.length === 0 || names.some((n) => typeof n !== 'string' || n === '')) {
    throw new TypeError('selfSignedCertificate: names must be non-empty strings, at least one');
  }
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const now = Date.now();
  const alt = names.map((n) =>
    isIP(n) === 0 ? tlv(0x82, Buffer.from(n, 'ascii')) : tlv(0x87, ipBytes(n)),
  );
  const extensions = tlv(
    0xa3,
    seq(
      // basicConstraints, critical: not a CA.
      seq(oid('2.5.29.19'), tlv(0x01, Buffer.from([0xff])), tlv(0x04, seq())),
      // subjectAltName.
      seq(oid('2.5.29.17'), tlv(0x04, seq(...alt))),
    ),
  );
  // Positive and minimal in DER: the first byte neither 0x00 nor 0x80 and above.
  const serial = randomBytes(16);
  serial[0] = ((serial[0] as number) & 0x7f) | 0x01;
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    positiveInteger(serial),
    ECDSA_WITH_SHA256,
    name(names[0] as string),
    seq(time(new Date(now - 3_600_000)), time(new Date(now + (opts.days ?? 365) * 86_400_000))),
    name(names[0] as string),
    publicKey.export({ type: 'spki', format: 'der' }),
    extensions,
  );
  const signature = sign('sha256', tbs, privateKey);
  const der = seq(tbs, ECDSA_WITH_SHA256, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const b64 = der.toString('base64').replace(/.{64}/g, '$&\n');
  const fingerprint256 = createHash('sha256')
    .update(der)
    .digest('hex')
    .toUpperCase()
    .replace(/(..)(?!$)/g, '$1:');
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${b64.replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`,
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    fingerprint256,
  };
}
