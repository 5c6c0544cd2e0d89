// graphile-worker's runner for the peer benchmark's end-to-end workload (README.md): concurrency
// C, the task `chat` POSTs the job's payload (the chat body) to the fake gateway's
// /v1/chat/completions with undici and stores the answer in the table bench_results (graphile-
// worker keeps no results of its own; run.sh creates the table). graphile-worker then deletes the
// job: a job is done when its result row exists and it is gone from the queue.
//
//   node graphile_worker.mjs --pg URL --fake-port F [--concurrency C] [--pool-size P]
//
// Prints `ready` once the runner listens for jobs; stops the runner and exits on SIGTERM/SIGINT.
import { Logger, run } from 'graphile-worker';
import { Pool } from 'undici';
import { parseArgs } from './closed_loop.mjs';

const args = parseArgs();
const concurrency = Number(args.concurrency ?? 64);
const gateway = new Pool(`http://127.0.0.1:${args['fake-port']}`, { connections: concurrency });
const headers = { 'content-type': 'application/json' };
const path = '/v1/chat/completions';
// Only warnings and errors: by default graphile-worker logs a line per job, which the other
// systems do not do (the engine runs with --log-level warn).
const logger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(`[${level}] ${message}`);
});

const runner = await run({
  connectionString: args.pg,
  concurrency,
  // A connection for each job's own query besides the runner's fetching and completing.
  maxPoolSize: Number(args['pool-size'] ?? concurrency + 16),
  noHandleSignals: true,
  logger,
  taskList: {
    chat: async (payload, helpers) => {
      const body = JSON.stringify(payload);
      const res = await gateway.request({ method: 'POST', path, headers, body });
      const answer = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`gateway answered ${res.statusCode}`);
      await helpers.query('insert into bench_results (job_id, result) values ($1, $2)', [
        helpers.job.id,
        answer,
      ]);
    },
  },
});
console.log('ready');

// Once only: a signal may arrive twice (GNU timeout also signals its process group).
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await runner.stop();
  await gateway.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
