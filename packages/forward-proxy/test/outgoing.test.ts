// Peer: the proxy in process and the proxy program spawned as a child process, with an origin
// on 127.0.0.1 that answers with the source address it saw, for HTTP and CONNECT alike.
import { createServer as createHttpServer, type Server } from 'node:http';
import { getOverTunnel } from '@proxy-op/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outgoingAddressFor } from '../src/outgoing.js';
import { startForwardProxy } from '../src/proxy.js';
import {
  freePort,
  killAllSpawned,
  LOOPBACK_ORIGINS,
  listen,
  startProgram,
  stopProgram,
  tunnel,
  viaProxy,
} from './support.js';

let origin: { server: Server; port: number };

beforeAll(async () => {
  const server = createHttpServer((req, res) => res.end(req.socket.remoteAddress));
  origin = { server, port: await listen(server) };
});

afterAll(async () => {
  origin?.server.close();
  await killAllSpawned();
});

/** What the origin saw as the source, through a tunnel: the body of a plain GET sent in it. */
async function sourceThroughTunnel(proxy: { address: string; port: number }): Promise<string> {
  const t = await tunnel(proxy, `127.0.0.1:${origin.port}`);
  expect(t.status).toBe(200);
  return getOverTunnel(t.socket, '127.0.0.1');
}

describe('outgoingAddress', () => {
  it('a loopback address is the source of connections to loopback origins only', () => {
    const pick = outgoingAddressFor('127.0.5.20');
    expect(pick('127.0.0.1')).toBe('127.0.5.20');
    expect(pick('10.0.0.1')).toBeUndefined();
    expect(pick('example.com')).toBeUndefined();
    expect(pick('::1')).toBeUndefined();
    expect(outgoingAddressFor('192.0.2.7')('example.com')).toBe('192.0.2.7');
    expect(outgoingAddressFor(undefined)('127.0.0.1')).toBeUndefined();
  });

  it('in process: HTTP and CONNECT to a loopback origin leave from it', async () => {
    const proxy = await startForwardProxy({
      name: 'out',
      address: '127.0.5.20',
      port: 0,
      allowedSources: ['127.0.0.0/8'],
      outgoingAddress: '127.0.5.20',
      egress: LOOPBACK_ORIGINS,
    });
    try {
      const plain = await viaProxy(proxy.address, `http://127.0.0.1:${origin.port}/`);
      expect(plain).toEqual({ status: 200, body: '127.0.5.20' });
      expect(await sourceThroughTunnel(proxy.address)).toBe('127.0.5.20');
    } finally {
      await proxy.close();
    }
  });

  it('unset: the system picks the source (127.0.0.1 for a loopback origin)', async () => {
    const proxy = await startForwardProxy({
      name: 'out',
      address: '127.0.5.21',
      port: 0,
      allowedSources: ['127.0.0.0/8'],
      egress: LOOPBACK_ORIGINS,
    });
    try {
      const plain = await viaProxy(proxy.address, `http://127.0.0.1:${origin.port}/`);
      expect(plain).toEqual({ status: 200, body: '127.0.0.1' });
    } finally {
      await proxy.close();
    }
  });

  it('the program reads it from its config file', async () => {
    const address = '127.0.5.22';
    const p = await startProgram({
      address,
      port: await freePort(address),
      allowedSources: ['127.0.0.0/8'],
      outgoingAddress: address,
    });
    try {
      const plain = await viaProxy(p, `http://127.0.0.1:${origin.port}/`);
      expect(plain).toEqual({ status: 200, body: address });
      expect(await sourceThroughTunnel(p)).toBe(address);
    } finally {
      await stopProgram(p);
    }
  });
});
