// Peer: none (in-process). The server over loopback HTTPS, against a plain JSON serialisation of the
// same objects as the baseline: there is no real kube-apiserver on this machine to compare with.
import { Agent, request } from 'node:https';
import { test } from 'vitest';
import { KubeTestServer } from '../src/index.js';

// BENCH_SMOKE=1 is the smoke run CI makes: a few hundred objects and changes, only to show the
// benchmark runs and measures.
const SMOKE = process.env.BENCH_SMOKE === '1';
const OBJECTS = Number(process.env.BENCH_OBJECTS ?? (SMOKE ? 300 : 10_000));
const WATCHERS = 10;
const CHANGES = Number(process.env.BENCH_CHANGES ?? (SMOKE ? 100 : 2_000));
/** Says on stderr which part starts, so a stall names where it is. */
const part = (name: string) => process.stderr.write(`bench: ${name}…\n`);

function object(i: number) {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: `cm-${String(i).padStart(5, '0')}`,
      labels: { app: 'bench', shard: String(i % 10) },
    },
    data: { a: 'x'.repeat(32), b: String(i), c: 'some configuration value', d: 'y'.repeat(64) },
  };
}

function send(
  server: KubeTestServer,
  agent: Agent,
  method: string,
  path: string,
  body?: object,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(new URL(path, server.url), {
      method,
      agent,
      ca: server.caCert,
      headers: {
        Authorization: `Bearer ${server.adminToken}`,
        ...(payload === undefined
          ? {}
          : {
              'Content-Type':
                method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
            }),
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

function heapMiB(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

function rate(n: number, ms: number): string {
  return `${Math.round((n / ms) * 1000).toLocaleString('en-US')}/s`;
}

test(`${OBJECTS.toLocaleString('en-US')}-object list and a watch fan-out to ${WATCHERS} watchers`, {
  timeout: 600_000,
}, async () => {
  const server = await KubeTestServer.start();
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const lines: string[] = [];
  try {
    part(`create ${OBJECTS} objects`);
    const heapBefore = heapMiB();
    let t = performance.now();
    for (let i = 0; i < OBJECTS; i += 16) {
      const batch: Promise<string>[] = [];
      for (let j = i; j < Math.min(OBJECTS, i + 16); j++)
        batch.push(send(server, agent, 'POST', '/api/v1/namespaces/default/configmaps', object(j)));
      await Promise.all(batch);
    }
    const createMs = performance.now() - t;
    const heapAfter = heapMiB();
    const stored = server.objects('', 'configmaps', 'default');
    const perObject = ((heapAfter - heapBefore) * 1024 * 1024) / OBJECTS;
    const jsonBytes = JSON.stringify(stored).length / OBJECTS;

    // Baseline memory: the same objects parsed from JSON into plain objects.
    const text = JSON.stringify(stored);
    const baseBefore = heapMiB();
    const parsed = JSON.parse(text) as unknown[];
    const baseAfter = heapMiB();
    const basePerObject = ((baseAfter - baseBefore) * 1024 * 1024) / parsed.length;

    // List: the server over HTTPS (serialise, send, receive, parse) vs JSON round trip in memory.
    part('list');
    const runs = SMOKE ? 2 : 5;
    t = performance.now();
    let items = 0;
    for (let r = 0; r < runs; r++) {
      const list = JSON.parse(
        await send(server, agent, 'GET', '/api/v1/namespaces/default/configmaps'),
      ) as { items: unknown[] };
      items += list.items.length;
    }
    const listMs = performance.now() - t;
    t = performance.now();
    let baseItems = 0;
    for (let r = 0; r < runs; r++)
      baseItems += (JSON.parse(JSON.stringify({ items: stored })) as { items: unknown[] }).items
        .length;
    const baseListMs = performance.now() - t;

    // Watch fan-out: WATCHERS watches, CHANGES modifications, until every watcher saw every event.
    part(`watch fan-out to ${WATCHERS} watchers`);
    const rv = server.resourceVersion;
    let received = 0;
    const want = WATCHERS * CHANGES;
    let allSeen: () => void = () => {};
    const seen = new Promise<void>((resolve, reject) => {
      allSeen = resolve;
      setTimeout(
        () => reject(new Error(`only ${received} of ${want} watch events arrived`)),
        120_000,
      ).unref();
    });
    const watches = Array.from({ length: WATCHERS }, () =>
      request(
        new URL(
          `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${rv}`,
          server.url,
        ),
        { ca: server.caCert, headers: { Authorization: `Bearer ${server.adminToken}` } },
        (res) => {
          let buf = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            buf += d;
            let i = buf.indexOf('\n');
            while (i >= 0) {
              JSON.parse(buf.slice(0, i));
              buf = buf.slice(i + 1);
              received++;
              i = buf.indexOf('\n');
            }
            if (received >= want) allSeen();
          });
        },
      ).end(),
    );
    await new Promise((r) => setTimeout(r, 200));
    t = performance.now();
    for (let i = 0; i < CHANGES; i += 16) {
      const batch: Promise<string>[] = [];
      for (let j = i; j < Math.min(CHANGES, i + 16); j++)
        batch.push(
          send(
            server,
            agent,
            'PATCH',
            `/api/v1/namespaces/default/configmaps/${object(j).metadata.name}`,
            { data: { b: `changed-${j}` } },
          ),
        );
      await Promise.all(batch.map((p) => p));
    }
    await seen;
    const watchMs = performance.now() - t;
    for (const w of watches) w.destroy();
    t = performance.now();
    let baseEvents = 0;
    for (let i = 0; i < CHANGES; i++) {
      const line = JSON.stringify({ type: 'MODIFIED', object: stored[i] });
      for (let w = 0; w < WATCHERS; w++) {
        JSON.parse(line);
        baseEvents++;
      }
    }
    const baseWatchMs = performance.now() - t;

    lines.push(
      `kube-testserver benchmark (Node ${process.version}, in-process server and client over loopback HTTPS; no real kube-apiserver here)`,
      `objects: ${OBJECTS} ConfigMaps of ~${Math.round(jsonBytes)} bytes of JSON each`,
      '',
      '| measure | kube-testserver | baseline | ratio |',
      '|---|---:|---:|---:|',
      `| create over HTTPS, 16 in flight | ${rate(OBJECTS, createMs)} | — | — |`,
      // The heap per object is left out of the smoke run's table: a few hundred objects are too
      // few for a heap difference to mean anything (it can even come out negative).
      ...(SMOKE
        ? []
        : [
            `| memory per stored object (bytes of heap; baseline: plain parsed JSON) | ${Math.round(perObject)} | ${Math.round(basePerObject)} | ${(perObject / basePerObject).toFixed(2)} |`,
          ]),
      `| list of ${OBJECTS} over HTTPS, objects (baseline: JSON round trip in memory; ratio of throughput) | ${rate(items, listMs)} (${(listMs / runs).toFixed(0)} ms per list) | ${rate(baseItems, baseListMs)} | ${(baseListMs / listMs).toFixed(2)} |`,
      `| watch fan-out, ${WATCHERS} watchers x ${CHANGES} changes, events delivered (baseline: serialise+parse only) | ${rate(received, watchMs)} | ${rate(baseEvents, baseWatchMs)} | ${(baseWatchMs / watchMs).toFixed(2)} |`,
    );
    console.log(lines.join('\n'));
  } finally {
    agent.destroy();
    await server.stop();
  }
});
