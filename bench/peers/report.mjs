// The table of the peer benchmark (README.md), from the results.tsv that run.sh writes:
//   node report.mjs RESULTS.tsv
// One row per (system + client, workload): the median over rounds and [min-max] of jobs/s, p50
// and p99 enqueue latency, server CPU per job of each server-side process, client CPU; then the
// ratios Switchyard ÷ peer, computed round by round (the systems of one round ran back to back)
// and summarised the same way.
import { readFileSync } from 'node:fs';

const rows = readFileSync(process.argv[2], 'utf8').trim().split('\n').slice(1);
// runs: "system|client|workload" → round → metric → number
const runs = new Map();
for (const line of rows) {
  const [round, system, client, workload, metric, value] = line.split('\t');
  const key = `${system}|${client}|${workload}`;
  if (!runs.has(key)) runs.set(key, new Map());
  const byRound = runs.get(key);
  if (!byRound.has(round)) byRound.set(round, {});
  byRound.get(round)[metric] = Number(value);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fmt = (x, digits) => (Math.abs(x) >= 100 || digits === 0 ? x.toFixed(0) : x.toFixed(digits));
/// "median [min-max]", or the one value when there is one round.
function summary(xs, digits = 1) {
  const v = xs.filter((x) => Number.isFinite(x));
  if (v.length === 0) return '-';
  const m = fmt(median(v), digits);
  if (v.length === 1) return m;
  return `${m} [${fmt(Math.min(...v), digits)}-${fmt(Math.max(...v), digits)}]`;
}
const values = (key, metric) => [...(runs.get(key)?.values() ?? [])].map((r) => r[metric]);

const systems = {
  switchyard: 'Switchyard',
  bullmq: 'BullMQ',
  graphile: 'graphile-worker',
  bare: 'bare server',
};
const clients = { cpp: 'C++ sy_bench_submit', node: 'Node' };
// What the Node client of each system is: the same closed-loop code around each one's own API.
const nodeClient = {
  switchyard: 'Node undici',
  bare: 'Node undici',
  bullmq: 'Node bullmq',
  graphile: 'Node graphile-worker',
};
const who = (system, client) =>
  `${systems[system]} / ${client === 'node' ? nodeClient[system] : clients[client]}`;
const workloads = { enqueue: 'durable enqueue', e2e: 'end to end', bulk: 'addBulk' };
const order = [
  'switchyard|cpp', 'switchyard|node', 'bullmq|node', 'graphile|node', 'bare|cpp', 'bare|node',
];

const header = ['system / client', 'workload', 'rounds', 'jobs/s', 'p50 ms', 'p99 ms',
  'server CPU us/job (per process)', 'client CPU %', 'other CPU %'];
const table = [header];
const notes = [];
for (const wl of ['enqueue', 'bulk', 'e2e']) {
  for (const sc of order) {
    const key = `${sc}|${wl}`;
    if (!runs.has(key)) continue;
    const [system, client] = sc.split('|');
    const rounds = [...runs.get(key).values()];
    const invalid = rounds.filter((r) => r.valid !== 1).length;
    // The server-side processes: every cpu_us_per_job.<label> but the fake gateway's and the sum.
    const procs = Object.keys(rounds[0])
      .filter((m) => m.startsWith('cpu_us_per_job.'))
      .map((m) => m.slice('cpu_us_per_job.'.length))
      .filter((p) => p !== 'fake' && p !== 'server');
    const perProc = procs.map((p) => `${p} ${fmt(median(values(key, `cpu_us_per_job.${p}`)), 1)}`);
    const server = summary(values(key, 'cpu_us_per_job.server'));
    const clientCpu = values(key, 'client_cpu_pct');
    const saturated = clientCpu.some((c) => c > 90);
    const bulk = rounds[0].bulk_size;
    const label = system === 'bare' ? 'enqueue: 202, no work'
      : wl === 'bulk' ? `enqueue, addBulk(${bulk})` : workloads[wl];
    table.push([
      who(system, client),
      label + (invalid ? ` INVALID (${invalid} bad)` : ''),
      String(rounds.length),
      summary(values(key, 'jobs_per_s'), 0),
      summary(values(key, 'p50_ms'), 2),
      summary(values(key, 'p99_ms'), 2),
      procs.length > 1 ? `${perProc.join(' + ')} = ${server}` : `${perProc[0]} (${server})`,
      summary(clientCpu, 0) + (saturated ? ' !' : ''),
      summary(values(key, 'other_cpu_pct'), 0),
    ]);
    const row = `${who(system, client)}, ${workloads[wl]}`;
    if (saturated) {
      notes.push(`${row}: the client used more than 90% of a core; the client, not the server,` +
        ' may be the limit.');
    }
    if (invalid) {
      notes.push(`${row}: ${invalid} round(s) with missing or failed jobs (bad, missing in` +
        ' results.tsv): not a valid result.');
    }
  }
}

function print(t) {
  const widths = t[0].map((_, c) => Math.max(...t.map((r) => r[c].length)));
  for (const r of t) console.log(r.map((cell, c) => cell.padEnd(widths[c])).join('  ').trimEnd());
}

/// Per round a/b of a metric, for the rounds both ran; "-" when none did.
function ratio(keyA, keyB, metric, digits = 2) {
  const a = runs.get(keyA);
  const b = runs.get(keyB);
  if (!a || !b) return '-';
  const rs = [...a.keys()].filter((r) => b.has(r)).map((r) => a.get(r)[metric] / b.get(r)[metric]);
  const bad = [...a.keys()].some((r) => a.get(r).valid !== 1 || b.get(r)?.valid !== 1);
  return summary(rs, digits) + (bad ? ' (invalid runs)' : '');
}

console.log('== peer benchmark: median [min-max] over rounds');
print(table);
console.log('  server CPU: engine + nats-server; redis-server (with its AOF rewrite children)');
console.log('  + the Node worker; postgres (all its processes) + the Node worker. Not counted:');
console.log('  the fake gateway. other CPU %: the machine busy with anything else meanwhile.');
for (const n of notes) console.log(`  note: ${n}`);

const ratios = [['ratio', 'workload', 'jobs/s', 'server CPU us/job (peer ÷ Switchyard)']];
for (const [peer, name] of [['bullmq', 'BullMQ'], ['graphile', 'graphile-worker']]) {
  for (const wl of ['enqueue', 'e2e']) {
    for (const client of ['cpp', 'node']) {
      const sy = `switchyard|${client}|${wl}`;
      const p = `${peer}|node|${wl}`;
      if (!runs.has(sy) || !runs.has(p)) continue;
      ratios.push([
        `Switchyard (${clients[client]} client) ÷ ${name}`,
        workloads[wl],
        ratio(sy, p, 'jobs_per_s'),
        ratio(p, sy, 'cpu_us_per_job.server'),
      ]);
    }
  }
}
for (const client of ['cpp', 'node']) {
  const sy = `switchyard|${client}|enqueue`;
  const bare = `bare|${client}|enqueue`;
  if (!runs.has(sy) || !runs.has(bare)) continue;
  ratios.push([
    `Switchyard ÷ bare server (${clients[client]} client; target >= 0.60)`,
    workloads.enqueue,
    ratio(sy, bare, 'jobs_per_s'),
    '-',
  ]);
}
if (ratios.length > 1) {
  console.log('\n== ratios, round by round (same client, same round): median [min-max]');
  print(ratios);
}
