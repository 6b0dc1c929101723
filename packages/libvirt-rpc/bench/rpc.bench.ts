// Small calls per second at 1, 8, 64 and 256 calls in flight on one
// connection, and volume upload throughput, side by side with libvirt's C
// client (python3-libvirt, one thread per call in flight, all on one
// connection) and `virsh vol-upload` on the same private libvirtd. Each call
// row also shows the CPU the daemon and the client used while it ran (100% is
// one core), so a reader can tell when the daemon is the limit.
// Run with `npm run bench` after `npm run build`, as root. BENCH_SECONDS sets
// how long each call loop runs (default 3), BENCH_ROUNDS how many alternating
// rounds are run (default 3, best kept), BENCH_UPLOAD_MIB the upload size
// (default 512; 0 skips the upload). BENCH_SMOKE=1 is the smoke run CI makes
// (short loops at 1 and 64 in flight, one round, a 4 MiB upload), only to show
// the benchmark runs and measures. Without libvirtd it says it skipped; without
// python3-libvirt the C client's column is left out with the reason (under
// CI=true, where .ci/apt-packages installs both, either fails the run).
import { execFile } from 'node:child_process';
import { createReadStream, readFileSync } from 'node:fs';
import { mkdir, open, stat } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LIBVIRTD_PEERS, startLibvirtd } from '@proxy-op/libvirt-harness';
import { connect, type LibvirtClient, unixDialer } from '@proxy-op/libvirt-rpc';
import { missingPeers } from '@proxy-op/testkit';

const exec = promisify(execFile);
const SMOKE = process.env.BENCH_SMOKE === '1';
const CI = process.env.CI === 'true';
const SECONDS = Number(process.env.BENCH_SECONDS ?? (SMOKE ? 0.3 : 3));
const UPLOAD_MIB = Number(process.env.BENCH_UPLOAD_MIB ?? (SMOKE ? 4 : 512));
const IN_FLIGHT = SMOKE ? [1, 64] : [1, 8, 64, 256];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (SMOKE ? 1 : 3));
const WARM_CALLS = SMOKE ? 200 : 2000;
const PYTHON = '/usr/bin/python3';
/** Says on stderr which part starts, so a stall names where it is. */
const part = (name: string) => process.stderr.write(`bench: ${name}…\n`);

const noDaemon = missingPeers(LIBVIRTD_PEERS);
if (noDaemon !== undefined) {
  if (CI) throw new Error(`libvirtd: ${noDaemon} (.ci/apt-packages installs libvirt-daemon)`);
  console.log(`skipped: libvirtd is what this benchmark measures against, and ${noDaemon}`);
  process.exit(0);
}
const TICK = Number((await exec('getconf', ['CLK_TCK'])).stdout);

interface Rate {
  /** Calls per second. */
  rate: number;
  /** CPU the daemon used meanwhile, in cores. */
  daemon: number;
  /** CPU the client used meanwhile, in cores. */
  client: number;
}

/** CPU seconds a process has used (all its threads, user and system). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICK;
}

/** `inFlight` loops of calls on one connection for SECONDS seconds. */
async function ours(c: LibvirtClient, inFlight: number, daemonPid: number): Promise<Rate> {
  for (let i = 0; i < WARM_CALLS; i++) await c.connectGetLibVersion(); // warm up
  const end = Date.now() + SECONDS * 1000;
  let n = 0;
  const d0 = cpuSeconds(daemonPid);
  const u0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (Date.now() < end) {
        await c.connectGetLibVersion();
        n++;
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  const u = process.cpuUsage(u0);
  return {
    rate: n / s,
    daemon: (cpuSeconds(daemonPid) - d0) / s,
    client: (u.user + u.system) / 1e6 / s,
  };
}

/** The same with the C client: `inFlight` threads calling on one connection. */
async function theirs(uri: string, inFlight: number, daemonPid: number): Promise<Rate> {
  const script = `
import libvirt, threading, time, resource, json, os
TICK = os.sysconf('SC_CLK_TCK')
def daemon_cpu():
    f = open('/proc/${daemonPid}/stat').read().split(') ')[1].split(' ')
    return (int(f[11]) + int(f[12])) / TICK
def own_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c = libvirt.open(${JSON.stringify(uri)})
for _ in range(${WARM_CALLS}): c.getLibVersion()
count = [0] * ${inFlight}
stop = time.time() + ${SECONDS}
def work(i):
    while time.time() < stop:
        c.getLibVersion(); count[i] += 1
ts = [threading.Thread(target=work, args=(i,)) for i in range(${inFlight})]
d0, u0, t0 = daemon_cpu(), own_cpu(), time.time()
for th in ts: th.start()
for th in ts: th.join()
s = time.time() - t0
print(json.dumps({'rate': sum(count) / s, 'daemon': (daemon_cpu() - d0) / s, 'client': (own_cpu() - u0) / s}))
`;
  return JSON.parse((await exec(PYTHON, ['-c', script], { timeout: 120_000 })).stdout) as Rate;
}

const fmt = (n: number) => n.toFixed(0);
const pct = (n: number) => `${(n * 100).toFixed(0)}%`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

console.log(`load average before: ${load()}`);
part('libvirtd');
const daemon = await startLibvirtd();
try {
  // The C client (python3-libvirt): without it its column is left out.
  const noC = (await exec(PYTHON, ['-c', 'import libvirt']).then(
    () => undefined,
    (e: Error) => e.message.split('\n').findLast((l) => l.trim() !== '') ?? e.message,
  )) as string | undefined;
  if (noC !== undefined) {
    if (CI) throw new Error(`python3-libvirt: ${noC} (.ci/apt-packages installs it)`);
    console.error(
      `bench: the C client's column left out (apt-get install python3-libvirt): ${noC}`,
    );
  }
  const uri = daemon.uri('test:///default');
  const client = await connect({
    dialer: unixDialer(daemon.socket),
    uri: 'test:///default',
    keepalive: false,
  });
  const clientKa = await connect({ dialer: unixDialer(daemon.socket), uri: 'test:///default' });
  // Rounds alternate between the clients (which one goes first alternates
  // too) and the best of each is kept, so a burst of load on a shared
  // machine does not decide the comparison.
  // Warm up the JIT and the daemon's worker threads before anything is timed.
  part('warm-up');
  await ours(client, 64, daemon.pid);
  await ours(clientKa, 1, daemon.pid);
  const runs = new Map<string, Rate[]>();
  const add = (key: string, r: Rate) => runs.set(key, [...(runs.get(key) ?? []), r]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const w of IN_FLIGHT) {
      part(`round ${round + 1}: small calls, ${w} in flight`);
      const pair: [string, () => Promise<Rate>][] = [
        [`ours ${w}`, () => ours(client, w, daemon.pid)],
      ];
      if (noC === undefined) pair.push([`C ${w}`, () => theirs(uri, w, daemon.pid)]);
      if (round % 2 === 1) pair.reverse();
      for (const [key, run] of pair) add(key, await run());
    }
    part(`round ${round + 1}: small calls, keepalive on`);
    add('ours 1 keepalive', await ours(clientKa, 1, daemon.pid));
    const line = IN_FLIGHT.map((w) => {
      const a = runs.get(`ours ${w}`)![round]!;
      const b = runs.get(`C ${w}`)?.[round];
      return b === undefined
        ? `${w}: ${a.rate.toFixed(0)}`
        : `${w}: ${a.rate.toFixed(0)}/${b.rate.toFixed(0)} = ${ratio(a.rate, b.rate)}`;
    }).join(', ');
    console.log(`round ${round + 1} (calls/s, this client/C client, in flight): ${line}`);
  }
  await client.close();
  await clientKa.close();
  const best = (key: string) => runs.get(key)?.reduce((a, b) => (b.rate > a.rate ? b : a));

  console.log(
    `\nsmall calls (CONNECT_GET_LIB_VERSION on test:///default), calls/s, best of ${ROUNDS} alternating rounds of ${SECONDS} s;`,
  );
  console.log('CPU is in cores x 100 while the round ran (daemon / client)\n');
  console.log(
    '| in flight | this client | daemon | client | C client | daemon | client | this / C |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  const row = (label: string, a: Rate | undefined, b: Rate | undefined) => {
    if (a === undefined || a.rate === 0) throw new Error(`${label}: no call was made`);
    const c = b === undefined ? ['—', '—', '—', '—'] : [fmt(b.rate), pct(b.daemon), pct(b.client)];
    if (b !== undefined) c.push(ratio(a.rate, b.rate));
    console.log(`| ${label} | ${[fmt(a.rate), pct(a.daemon), pct(a.client), ...c].join(' | ')} |`);
  };
  for (const w of IN_FLIGHT) row(String(w), best(`ours ${w}`), best(`C ${w}`));
  row('1, keepalive on', best('ours 1 keepalive'), best('C 1'));
  console.log(`load average after calls: ${load()}`);

  if (UPLOAD_MIB > 0) await upload();
} finally {
  await daemon.stop();
}

async function upload(): Promise<void> {
  // Upload: the same file into a fresh raw volume each way.
  part(`volume upload, ${UPLOAD_MIB} MiB`);
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
  console.log(`\nvolume upload, ${UPLOAD_MIB} MiB into a dir pool (best of ${ROUNDS})\n`);
  console.log('| measure | this client | virsh vol-upload | this / virsh |');
  console.log('|---|---:|---:|---:|');
  console.log(
    `| MiB/s | ${fmt(mibs(best(times.ours)))} | ${fmt(mibs(best(times.virsh)))} | ${ratio(mibs(best(times.ours)), mibs(best(times.virsh)))} |`,
  );
  console.log(`load average after upload: ${load()}`);
}
