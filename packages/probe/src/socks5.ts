/**
 * The client side of a SOCKS5 handshake (RFC 1928 `CONNECT` by domain name
 * or address, RFC 1929 user name and password), for the probe's SOCKS5
 * check: what it writes, how it reads the proxy's replies byte by byte, and
 * what each refusal means in words (never the credential).
 *
 * @module
 */
import { isIP, type Socket } from 'node:net';
import { StepFailure } from './http.js';
import type { ProbeCredentials } from './types.js';

const VERSION = 0x05;
const NO_AUTH = 0x00;
const USER_PASSWORD = 0x02;
const NO_ACCEPTABLE = 0xff;

/** The reply codes of RFC 1928 §6, in words. */
const REPLIES: Readonly<Record<number, string>> = {
  1: 'general SOCKS server failure',
  2: 'connection not allowed by ruleset',
  3: 'network unreachable',
  4: 'host unreachable',
  5: 'connection refused',
  6: 'TTL expired',
  7: 'command not supported',
  8: 'address type not supported',
};

/** Reads exactly `n` bytes of `socket`; what came after them is put back. */
export function readBytes(socket: Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let got: Buffer = Buffer.alloc(0);
    const done = () => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      got = got.length === 0 ? chunk : Buffer.concat([got, chunk]);
      if (got.length < n) return;
      done();
      socket.pause();
      if (got.length > n) socket.unshift(got.subarray(n));
      resolve(got.subarray(0, n));
    };
    const onEnd = () => {
      done();
      reject(new StepFailure('the proxy closed the connection in the SOCKS5 handshake'));
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('error', onError);
    socket.resume();
  });
}

/** DST.ADDR with its type byte: an IPv4 or IPv6 address, else a domain name. */
function destination(host: string): Buffer {
  const family = isIP(host);
  if (family === 4) return Buffer.from([0x01, ...host.split('.').map(Number)]);
  if (family === 6) {
    const words = expandIPv6(host);
    const b = Buffer.alloc(17);
    b[0] = 0x04;
    for (const [i, w] of words.entries()) b.writeUInt16BE(w, 1 + 2 * i);
    return b;
  }
  const name = Buffer.from(host, 'latin1');
  if (name.length === 0 || name.length > 255) {
    throw new StepFailure(`the target's host name is ${name.length} bytes; SOCKS5 takes 1 to 255`);
  }
  return Buffer.concat([Buffer.from([0x03, name.length]), name]);
}

/** The eight 16-bit words of an IPv6 address. */
function expandIPv6(address: string): number[] {
  const [head = '', tail] = address.split('::');
  const part = (s: string) => (s === '' ? [] : s.split(':').map((w) => Number.parseInt(w, 16)));
  const h = part(head);
  const t = tail === undefined ? [] : part(tail);
  return [...h, ...new Array(8 - h.length - t.length).fill(0), ...t];
}

/**
 * Opens a SOCKS5 tunnel over `socket` to `host:port`: the greeting, the
 * user name and password when `credentials` are given, the `CONNECT` and
 * its reply. Resolves with a line saying what was opened; throws a
 * `StepFailure` naming the refusal.
 */
export async function socks5Connect(
  socket: Socket,
  host: string,
  port: number,
  credentials: ProbeCredentials | undefined,
  until: <T>(p: Promise<T>) => Promise<T>,
): Promise<string> {
  const method = credentials === undefined ? NO_AUTH : USER_PASSWORD;
  socket.write(Buffer.from([VERSION, 1, method]));
  const chosen = await until(readBytes(socket, 2));
  if (chosen[0] !== VERSION) throw new StepFailure('the proxy does not speak SOCKS5');
  if (chosen[1] === NO_ACCEPTABLE || chosen[1] !== method) {
    throw new StepFailure(
      credentials === undefined
        ? 'the proxy wants SOCKS5 authentication and the probe has no credential'
        : 'the proxy does not take a SOCKS5 user name and password',
    );
  }
  if (credentials !== undefined) {
    const user = Buffer.from(credentials.username, 'utf8');
    const password = Buffer.from(credentials.password, 'utf8');
    if (user.length > 255 || password.length > 255) {
      throw new StepFailure('the credential is longer than SOCKS5 takes (255 bytes each)');
    }
    socket.write(
      Buffer.concat([
        Buffer.from([0x01, user.length]),
        user,
        Buffer.from([password.length]),
        password,
      ]),
    );
    const status = await until(readBytes(socket, 2));
    if (status[1] !== 0x00)
      throw new StepFailure('the proxy refused the SOCKS5 user name and password');
  }
  const port2 = Buffer.alloc(2);
  port2.writeUInt16BE(port);
  socket.write(Buffer.concat([Buffer.from([VERSION, 0x01, 0x00]), destination(host), port2]));
  const head = await until(readBytes(socket, 5));
  if (head[0] !== VERSION)
    throw new StepFailure('the proxy answered the SOCKS5 CONNECT with no SOCKS5 reply');
  const code = head[1] as number;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (code !== 0x00) {
    throw new StepFailure(
      `SOCKS5 CONNECT ${where}: the proxy answered ${REPLIES[code] ?? `reply ${code}`} (${code})`,
    );
  }
  // The bound address: its length is in the reply's fourth byte (and fifth, for a name).
  const atyp = head[3];
  const rest = atyp === 0x01 ? 4 - 1 + 2 : atyp === 0x04 ? 16 - 1 + 2 : (head[4] as number) + 2;
  await until(readBytes(socket, rest));
  return `SOCKS5 CONNECT ${where} succeeded`;
}
