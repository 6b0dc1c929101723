// Small calls per second (sequential and concurrent, one connection) and
// volume upload throughput, side by side with libvirt's C client
// (python3-libvirt) and `virsh vol-upload` on the same private libvirtd.
// Run with `npm run bench` after `npm run build`, as root. BENCH_SECONDS sets
// how long each call loop runs (default 3), BENCH_ROUNDS how many alternating
// rounds are run (default 3, best kept), BENCH_UPLOAD_MIB the upload size
// (default 512).
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdir, open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startLibvirtd } from '@proxy-op/libvirt-harness';
import { connect, type LibvirtClient, unixDialer } from '@proxy-op/libvirt-rpc';

const exec = promisify(execFile);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const UPLOAD_MIB = Number(process.env.BENCH_UPLOAD_MIB ?? 512);
const WINDOW = 64;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PYTHON = '/usr/bin/python3';

async function sequential(c: LibvirtClient): Promise<number> {
  for (let i = 0; i < 2000; i++) await c.connectGetLibVersion(); // warm up
  const end = Date.now() + SECONDS * 1000;
  let n = 0;
  const t0 = performance.now();
  while (Date.now() < end) {
    await c.connectGetLibVersion();
    n++;
  }
  return n / ((performance.now() - t0) / 1000);
}

async function concurrent(c: LibvirtClient): Promise<number> {
  const end = Date.now() + SECONDS * 1000;
  let n = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: WINDOW }, async () => {
      while (Date.now() < end) {
        await c.connectGetLibVersion();
        n++;
      }
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

async function pythonRate(uri: string, mode: 'seq' | 'conc'): Promise<number> {
  const script = `
import libvirt, time, threading, sys
c = libvirt.open(${JSON.stringify(uri)})
for _ in range(2000): c.getLibVersion()
S = ${SECONDS}
if sys.argv[1] == 'seq':
    t = time.time(); n = 0
    while time.time() - t < S:
        c.getLibVersion(); n += 1
    print(n / (time.time() - t))
else:
    count = [0] * ${WINDOW}
    stop = time.time() + S
    def work(i):
        while time.time() < stop:
            c.getLibVersion(); count[i] += 1
    t = time.time()
    ts = [threading.Thread(target=work, args=(i,)) for i in range(${WINDOW})]
    for th in ts: th.start()
    for th in ts: th.join()
    print(sum(count) / (time.time() - t))
`;
  return Number((await exec(PYTHON, ['-c', script, mode], { timeout: 120_000 })).stdout);
}

const fmt = (n: number) => n.toFixed(0).padStart(9);
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;

const daemon = await startLibvirtd();
try {
  const uri = daemon.uri('test:///default');
  const ours = await connect({
    dialer: unixDialer(daemon.socket),
    uri: 'test:///default',
    keepalive: false,
  });
  const oursKa = await connect({ dialer: unixDialer(daemon.socket), uri: 'test:///default' });
  // Rounds alternate between the clients and the best of each is kept, so a
  // burst of load on a shared machine does not decide the comparison.
  const r = { seq: [] as number[], seqKa: [] as number[], conc: [] as number[] };
  const py = { seq: [] as number[], conc: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    r.seq.push(await sequential(ours));
    py.seq.push(await pythonRate(uri, 'seq'));
    r.seqKa.push(await sequential(oursKa));
    r.conc.push(await concurrent(ours));
    py.conc.push(await pythonRate(uri, 'conc'));
  }
  await ours.close();
  await oursKa.close();
  const top = (xs: number[]) => Math.max(...xs);
  const [seq, seqKa, conc, pySeq, pyConc] = [r.seq, r.seqKa, r.conc, py.seq, py.conc].map(top) as [
    number,
    number,
    number,
    number,
    number,
  ];

  console.log(
    `small calls (CONNECT_GET_LIB_VERSION on test:///default), best of ${ROUNDS} rounds of ${SECONDS} s`,
  );
  console.log('                                  this client   C client   ratio');
  console.log(`sequential calls/s               ${fmt(seq)}  ${fmt(pySeq)}   ${ratio(seq, pySeq)}`);
  console.log(
    `sequential calls/s, keepalive on ${fmt(seqKa)}  ${fmt(pySeq)}   ${ratio(seqKa, pySeq)}`,
  );
  console.log(
    `concurrent calls/s (${WINDOW} in flight)${fmt(conc)}  ${fmt(pyConc)}   ${ratio(conc, pyConc)}`,
  );

  // Upload: the same file into a fresh raw volume each way.
  const poolDir = join(daemon.dir, 'bench-pool');
  await mkdir(poolDir, { recursive: true });
  await daemon.virsh('qemu:///system', ['pool-create-as', 'bench', 'dir', '--target', poolDir]);
  const src = join(daemon.dir, 'image.bin');
  const f = await open(src, 'w');
  const block = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < UPLOAD_MIB; i++) {
    block.fill(i & 0xff);
    block.writeUInt32BE(i, 0);
    await f.write(block);
  }
  await f.close();
  const size = (await stat(src)).size;
  const volXml = (name: string) =>
    `<volume><name>${name}</name><capacity unit="bytes">${size}</capacity><target><format type="raw"/></target></volume>`;

  const q = await connect({ dialer: unixDialer(daemon.socket), uri: 'qemu:///system' });
  const pool = await q.storagePoolLookupByName('bench');
  const times: { ours: number[]; virsh: number[] } = { ours: [], virsh: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const vol = await q.storageVolCreateXml(pool, volXml(`ours-${round}.img`));
    let t0 = performance.now();
    await q.storageVolUpload(vol, createReadStream(src, { highWaterMark: 1024 * 1024 }));
    times.ours.push((performance.now() - t0) / 1000);
    await q.storageVolDelete(vol);

    await q.storageVolCreateXml(pool, volXml(`virsh-${round}.img`));
    t0 = performance.now();
    await daemon.virsh('qemu:///system', [
      'vol-upload',
      `virsh-${round}.img`,
      src,
      '--pool',
      'bench',
    ]);
    times.virsh.push((performance.now() - t0) / 1000);
    await daemon.virsh('qemu:///system', ['vol-delete', `virsh-${round}.img`, '--pool', 'bench']);
  }
  await q.close();
  await daemon.virsh('qemu:///system', ['pool-destroy', 'bench']);
  const best = (xs: number[]) => Math.min(...xs);
  const mibs = (s: number) => size / 1024 / 1024 / s;
  console.log(`\nvolume upload, ${UPLOAD_MIB} MiB into a dir pool (best of ${ROUNDS})`);
  console.log('                 this client   virsh vol-upload   ratio');
  console.log(
    `MiB/s            ${fmt(mibs(best(times.ours)))}   ${fmt(mibs(best(times.virsh)))}          ${ratio(mibs(best(times.ours)), mibs(best(times.virsh)))}`,
  );
} finally {
  await daemon.stop();
}
