// The closed-loop runner every Node driver of the peer benchmark shares (README.md), so that
// Switchyard, BullMQ and graphile-worker are driven by the same code:
//   C concurrent async loops, each one request at a time, N requests in total, latency of each
//   request kept in an array and sorted once at the end, and a last `RESULT key=value ...` line
//   in the format of sy_bench_submit (bench/load_submit.cpp) for run.sh to read.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';

export { sleep };

/// `--name value` pairs into an object of strings (every flag takes a value).
export function parseArgs(argv = process.argv.slice(2)) {
  const out = {};
  for (let i = 0; i + 1 < argv.length; i += 2) {
    if (!argv[i].startsWith('--')) throw new Error(`unexpected argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  return out;
}

/// The chat-completion body of job i: byte for byte what load_submit.cpp's chat_body() sends.
export function chatBody(i, model = 'bench') {
  return { model, messages: [{ role: 'user', content: `hi ${i}` }] };
}

/// The value at percentile p of a sorted array, rounded like load_submit.cpp's percentile_ms().
function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  const rank = Math.floor((p / 100) * (sorted.length - 1) + 0.5);
  return sorted[Math.min(rank, sorted.length - 1)];
}

/// Runs `submit(i)` for i in [0, n) on `clients` concurrent loops. `submit` resolves true for
/// the expected answer and false for another one; a throw counts as a transport error. Returns
/// the rate over the whole run, the latency percentiles in ms, and this process's CPU (% of one
/// core) over the same interval, which says whether the client itself was the limit.
export async function closedLoop({ n, clients, submit }) {
  const latencies = new Float64Array(n);
  let next = 0;
  let answered = 0;
  let unexpected = 0;
  let errors = 0;
  const loop = async () => {
    for (let i = next++; i < n; i = next++) {
      const t0 = performance.now();
      let ok = false;
      try {
        ok = await submit(i);
      } catch (err) {
        if (errors++ === 0) console.error(`first error: ${err?.stack ?? err}`);
        continue;
      }
      latencies[answered++] = performance.now() - t0;
      if (!ok) unexpected++;
    }
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, loop));
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const sorted = latencies.subarray(0, answered).sort();
  return {
    start: t0,
    secs,
    rate: answered / secs,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    p999: percentile(sorted, 99.9),
    max: percentile(sorted, 100),
    unexpected,
    errors,
    bad: unexpected + errors,
    cpuPct: (100 * (cpu.user + cpu.system)) / 1e6 / secs,
  };
}

/// How many chat completions the fake gateway has answered since its last reset.
export async function fakeRequests(port) {
  const res = await request(`http://127.0.0.1:${port}/_fake/stats`);
  const stats = await res.body.json();
  return stats.requests;
}

/// Polls `check()` every 2 ms (as load_submit.cpp's end-to-end wait does) until it resolves
/// true or `timeoutMs` passes; returns whether it held.
export async function pollUntil(check, timeoutMs = 600_000) {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check()) return true;
    await sleep(2);
  }
  return false;
}

/// The end-to-end wait shared by the drivers: first until the fake gateway has answered `n`
/// requests (cheap: the system under test is not asked), then until `allDone()` says every job is
/// recorded as finished (at most 10 minutes, then 2 more: a run that times out shows its missing
/// jobs in the drivers' untimed count). Returns seconds from `start` (a performance.now() value)
/// to the end and to the moment the fake saw the last request.
export async function waitEndToEnd({ start, n, fakePort, allDone }) {
  const fakeSawAll = await pollUntil(async () => (await fakeRequests(fakePort)) >= n);
  const fakeAll = (performance.now() - start) / 1000;
  const done = await pollUntil(allDone, 120_000);
  if (!fakeSawAll || !done) console.error('end-to-end wait timed out');
  return { e2eSecs: (performance.now() - start) / 1000, fakeAll };
}

/// Prints the human summary and the `RESULT key=value ...` line (sy_bench_submit's keys, plus
/// cpu_pct and whatever `extra` holds).
export function printResult(label, n, clients, r, extra = {}) {
  const ms = (x) => x.toFixed(3);
  console.log(`${label}: ${n} requests over ${clients} concurrent loops in ${r.secs.toFixed(3)} s`);
  console.log(`  throughput ${Math.round(r.rate)} req/s; client CPU ${r.cpuPct.toFixed(0)}%`);
  const tail = `p99.9 ${ms(r.p999)}  max ${ms(r.max)}`;
  console.log(`  latency ms: p50 ${ms(r.p50)}  p99 ${ms(r.p99)}  ${tail}`);
  console.log(`  unexpected answers ${r.unexpected}, transport errors ${r.errors}`);
  const fields = {
    mode: 'submit',
    requests: n,
    connections: clients,
    secs: r.secs.toFixed(3),
    rate: Math.round(r.rate),
    p50: ms(r.p50),
    p99: ms(r.p99),
    p999: ms(r.p999),
    max: ms(r.max),
    bad: r.bad,
    cpu_pct: r.cpuPct.toFixed(1),
    ...extra,
  };
  console.log(`RESULT ${Object.entries(fields).map(([k, v]) => `${k}=${v}`).join(' ')}`);
}
