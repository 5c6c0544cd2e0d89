// BullMQ's Worker for the peer benchmark's end-to-end workload (README.md): concurrency C, each
// job's processor POSTs the job's data (the chat body) to the fake gateway's
// /v1/chat/completions with undici and returns the parsed answer, which BullMQ stores as the
// job's result (returnvalue).
//
//   node bullmq_worker.mjs --redis-port P --queue NAME --fake-port F [--concurrency C]
//
// Prints `ready` once connected; closes the worker and exits on SIGTERM or SIGINT.
import { Worker } from 'bullmq';
import { Pool } from 'undici';
import { parseArgs } from './closed_loop.mjs';

const args = parseArgs();
const concurrency = Number(args.concurrency ?? 64);
const connection = { host: '127.0.0.1', port: Number(args['redis-port']) };
const gateway = new Pool(`http://127.0.0.1:${args['fake-port']}`, { connections: concurrency });
const headers = { 'content-type': 'application/json' };
const path = '/v1/chat/completions';

const worker = new Worker(
  args.queue ?? 'bench',
  async (job) => {
    const body = JSON.stringify(job.data);
    const res = await gateway.request({ method: 'POST', path, headers, body });
    const answer = await res.body.json();
    if (res.statusCode !== 200) throw new Error(`gateway answered ${res.statusCode}`);
    return answer;
  },
  { connection, concurrency },
);
worker.on('error', (err) => console.error(`worker error: ${err?.stack ?? err}`));
worker.on('failed', (job, err) => console.error(`job ${job?.id} failed: ${err?.message}`));
await worker.waitUntilReady();
console.log('ready');

// Once only: a signal may arrive twice (GNU timeout also signals its process group).
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await worker.close();
  await gateway.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
