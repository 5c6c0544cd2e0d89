// graphile-worker's client for the peer benchmark (README.md), on the closed-loop runner every
// system shares.
//
//   node graphile.mjs --pg URL --mode enqueue|e2e|migrate [--requests N] [--connections C]
//                     [--e2e-fake FAKE_PORT]
//
// migrate: only creates graphile-worker's schema (run.sh does it before an enqueue measure).
// enqueue: C concurrent loops of `await workerUtils.addJob('chat', body)` over a pg Pool of C
//   connections: one INSERT (graphile_worker.add_job) per job, committed with PostgreSQL's
//   default synchronous_commit=on, so addJob resolves once the WAL is fsync'd. No worker runs.
// e2e: the same adds while graphile_worker.mjs (another process) executes them; then waits until
//   the fake gateway has answered N requests, bench_results holds N results and the queue is empty.
// The schema is migrated before the timer starts. Afterwards (untimed) it counts the jobs: queued
// ones for enqueue, stored results for e2e (and jobs left in the queue); `bad` counts every job
// missing from that count besides the errors of the adds.
import { Logger, makeWorkerUtils } from 'graphile-worker';
import pg from 'pg';
import { chatBody, closedLoop, parseArgs, printResult, waitEndToEnd } from './closed_loop.mjs';

const args = parseArgs();
const mode = args.mode ?? 'enqueue';
const n = Number(args.requests ?? 20000);
const clients = Number(args.connections ?? 64);

const pool = new pg.Pool({ connectionString: args.pg, max: clients });
const onError = (err) => console.error(`pg error: ${err?.message}`);
pool.on('error', onError);
pool.on('connect', (client) => client.on('error', onError));
// Only warnings and errors: graphile-worker's info lines are not part of what is measured.
const logger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(`[${level}] ${message}`);
});
const utils = await makeWorkerUtils({ pgPool: pool, logger });
await utils.migrate();
if (mode === 'migrate') {
  await utils.release();
  await pool.end();
  process.exit(0);
}

const r = await closedLoop({
  n,
  clients,
  submit: async (i) => Boolean((await utils.addJob('chat', chatBody(i))).id),
});

const count = async (sql) => Number((await pool.query(sql)).rows[0].count);
let extra = {};
let counted;
if (mode === 'e2e') {
  const e = await waitEndToEnd({
    start: r.start,
    n,
    fakePort: Number(args['e2e-fake']),
    // Done: every result stored and every job gone from the queue (graphile-worker deletes a
    // job once its task returned).
    allDone: async () =>
      (await count('select count(*) from bench_results')) >= n &&
      (await count('select count(*) from graphile_worker.jobs')) === 0,
  });
  counted = await count('select count(*) from bench_results');
  const left = await count('select count(*) from graphile_worker.jobs');
  console.log(`  end to end: ${counted} of ${n} results stored, ${left} jobs left in the queue`);
  extra = {
    e2e_s: e.e2eSecs.toFixed(3),
    e2e_jobs_per_s: Math.round(n / e.e2eSecs),
    fake_all_s: e.fakeAll.toFixed(3),
    left,
  };
} else {
  counted = await count('select count(*) from graphile_worker.jobs');
  console.log(`  ${counted} of ${n} jobs queued`);
}
extra = { ...extra, counted, missing: n - counted };
r.bad += n - counted;
printResult('graphile-worker addJob', n, clients, r, extra);
await utils.release();
await pool.end();
