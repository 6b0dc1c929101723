// Peers: the whoami target on loopback, reached by Node's own HTTP and TLS clients; its
// self-signed certificate read back by node:crypto's X509Certificate.
import { X509Certificate } from 'node:crypto';
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../src/cert.js';
import { startWhoami, type Whoami } from '../src/whoami.js';

function fetchText(
  url: string,
  opts: { localAddress?: string; ca?: string } = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const get = url.startsWith('https:') ? httpsGet : httpGet;
    get(url, { agent: false, ...opts }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    }).on('error', reject);
  });
}

describe('the whoami target', () => {
  let w: Whoami;
  beforeAll(async () => {
    w = await startWhoami({ host: '127.0.74.1' });
  });
  afterAll(async () => {
    await w?.close();
  });

  it('answers the nonce and the source address it saw, never to be cached', async () => {
    const r = await fetchText(`${w.http.href}anything?nonce=abcdef0123456789`, {
      localAddress: '127.0.74.7',
    });
    expect(r.status).toBe(200);
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.headers.connection).toBe('close');
    expect(JSON.parse(r.body)).toMatchObject({
      nonce: 'abcdef0123456789',
      source: '127.0.74.7',
      tls: false,
    });
    expect(w.answered).toBe(1);
  });

  it('refuses a request without a valid nonce with 400', async () => {
    for (const q of [
      '',
      '?nonce=',
      '?nonce=short',
      `?nonce=${'x'.repeat(129)}`,
      '?nonce=a%20b%20c%20d%20e',
    ]) {
      expect((await fetchText(`${w.http.href}${q}`)).status, q).toBe(400);
    }
    expect(w.answered).toBe(1);
  });

  it('answers over HTTPS with a certificate for its address, which verifies', async () => {
    expect(w.https?.protocol).toBe('https:');
    const r = await fetchText(`${w.https?.href}?nonce=0123456789abcdef`, {
      ca: w.certificate as string,
    });
    expect(JSON.parse(r.body)).toMatchObject({ nonce: '0123456789abcdef', tls: true });
    const x = new X509Certificate(w.certificate as string);
    expect(x.subjectAltName).toBe('IP Address:127.0.74.1');
    expect(x.fingerprint256).toBe(w.fingerprint256);
    expect(w.target()).toEqual({
      get: w.http,
      connect: w.https,
      tls: { fingerprint256: w.fingerprint256 },
    });
  });

  it('takes a certificate of its own, or none (CONNECT then goes to the HTTP listener)', async () => {
    const pair = selfSignedCertificate(['whoami.example', '127.0.74.2']);
    const own = await startWhoami({ host: '127.0.74.2', tls: { cert: pair.cert, key: pair.key } });
    const none = await startWhoami({ host: '127.0.74.3', tls: false });
    try {
      expect(own.fingerprint256).toBe(pair.fingerprint256);
      expect(none.https).toBeUndefined();
      expect(none.target()).toEqual({ get: none.http, connect: none.http });
    } finally {
      await own.close();
      await none.close();
    }
    await expect(startWhoami({ tls: { cert: pair.cert } })).rejects.toThrow(TypeError);
  });
});

describe('selfSignedCertificate', () => {
  it('names every host name and address, signs itself, and is valid now for a year', () => {
    const c = selfSignedCertificate(['probe.proxy-op.svc', '10.1.2.3', 'fd00::1']);
    const x = new X509Certificate(c.cert);
    expect(x.subject).toBe('CN=probe.proxy-op.svc');
    expect(x.subjectAltName).toBe(
      'DNS:probe.proxy-op.svc, IP Address:10.1.2.3, IP Address:FD00:0:0:0:0:0:0:1',
    );
    expect(x.verify(x.publicKey)).toBe(true);
    expect(x.ca).toBe(false);
    const days = (Date.parse(x.validTo) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(364);
    expect(days).toBeLessThan(366);
    expect(Date.parse(x.validFrom)).toBeLessThan(Date.now());
    expect(x.fingerprint256).toBe(c.fingerprint256);
  });

  it('serves TLS that a client trusting it accepts, and one trusting another refuses', async () => {
    const a = selfSignedCertificate(['127.0.74.4']);
    const b = selfSignedCertificate(['127.0.74.4']);
    const w = await startWhoami({ host: '127.0.74.4', tls: { cert: a.cert, key: a.key } });
    const handshake = (ca: string) =>
      new Promise<boolean>((resolve) => {
        const s = tlsConnect({ host: '127.0.74.4', port: Number(w.https?.port), ca }, () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      });
    try {
      expect(await handshake(a.cert)).toBe(true);
      expect(await handshake(b.cert)).toBe(false);
    } finally {
      await w.close();
    }
  });

  it('always has a serial number DER accepts (a random one starting with a zero byte broke it)', () => {
    for (let i = 0; i < 300; i++) {
      const x = new X509Certificate(selfSignedCertificate(['127.0.0.1']).cert);
      expect(x.serialNumber).toMatch(/^(0[1-9A-F]|[1-7][0-9A-F])[0-9A-F]{30}$/);
    }
  });

  it('refuses no names', () => {
    expect(() => selfSignedCertificate([])).toThrow(TypeError);
  });
});
