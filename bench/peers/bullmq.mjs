// BullMQ's client for the peer benchmark (README.md), on the closed-loop runner every system
// shares.
//
//   node bullmq.mjs --redis-port P --queue NAME --mode enqueue|bulk|e2e [--requests N]
//                   [--connections C] [--bulk-size B] [--e2e-fake FAKE_PORT]
//
// enqueue: C concurrent loops of `await queue.add('chat', body)` with the default job options
//   (results kept, as Switchyard keeps them); add() resolves once Redis has run the Lua script,
//   which with `appendfsync always` means once the AOF is fsync'd. No worker runs.
// bulk: a different workload: C loops of `await queue.addBulk(B jobs)`; rate in jobs/s, the
//   latencies are those of one addBulk call.
// e2e: the same adds while a Worker (bullmq_worker.mjs, another process) executes them; then
//   waits until the fake gateway has answered N requests and BullMQ counts N jobs finished.
// Afterwards (untimed) it counts the jobs: waiting ones for enqueue/bulk, completed ones for e2e;
// `bad` counts every job missing from that count besides the errors of the adds.
import { Queue } from 'bullmq';
import { chatBody, closedLoop, parseArgs, printResult, waitEndToEnd } from './closed_loop.mjs';

const args = parseArgs();
const mode = args.mode ?? 'enqueue';
const n = Number(args.requests ?? 20000);
const clients = Number(args.connections ?? 64);
const bulk = Number(args['bulk-size'] ?? 100);
const connection = { host: '127.0.0.1', port: Number(args['redis-port']) };

// One Queue, one Redis connection shared by every loop: BullMQ's ordinary use (commands sent
// while others are in flight are pipelined on it).
const queue = new Queue(args.queue ?? 'bench', { connection });
await queue.waitUntilReady();

let r;
if (mode === 'bulk') {
  const calls = Math.ceil(n / bulk);
  r = await closedLoop({
    n: calls,
    clients,
    submit: async (c) => {
      const jobs = [];
      for (let i = c * bulk; i < Math.min(n, (c + 1) * bulk); i++)
        jobs.push({ name: 'chat', data: chatBody(i) });
      const added = await queue.addBulk(jobs);
      return added.length === jobs.length;
    },
  });
  r.rate = n / r.secs; // jobs/s, not calls/s
} else {
  r = await closedLoop({
    n,
    clients,
    submit: async (i) => Boolean((await queue.add('chat', chatBody(i))).id),
  });
}

let extra = {};
let counted;
if (mode === 'e2e') {
  const e = await waitEndToEnd({
    start: r.start,
    n,
    fakePort: Number(args['e2e-fake']),
    allDone: async () => {
      const c = await queue.getJobCounts('completed', 'failed');
      return c.completed + c.failed >= n;
    },
  });
  counted = (await queue.getJobCounts('completed')).completed;
  const secs = e.e2eSecs.toFixed(3);
  console.log(`  end to end: ${counted} of ${n} completed ${secs} s after the first add`);
  extra = {
    e2e_s: e.e2eSecs.toFixed(3),
    e2e_jobs_per_s: Math.round(n / e.e2eSecs),
    fake_all_s: e.fakeAll.toFixed(3),
  };
} else {
  counted = (await queue.getJobCounts('wait')).wait;
  console.log(`  ${counted} of ${n} jobs waiting in the queue`);
}
extra = { ...extra, counted, missing: n - counted };
r.bad += n - counted;
const label = mode === 'bulk' ? `bullmq addBulk(${bulk})` : 'bullmq add';
printResult(label, n, clients, r, extra);
await queue.close();
