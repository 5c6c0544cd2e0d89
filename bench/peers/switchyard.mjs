// Switchyard's Node client for the peer benchmark (README.md): the same jobs as sy_bench_submit,
// sent with undici.
//
//   node switchyard.mjs --port P [--requests N] [--connections C]
//                       [--e2e-fake FAKE_PORT] [--ids-out FILE]
//
// Enqueue: C concurrent loops, each POSTing /v1/jobs and awaiting the 202 (answered once the job
// is fsync'd), over an undici Pool of C keep-alive connections. Also drives the bare server
// (sy_bench_bare), which answers the same 202 without doing anything: this client's ceiling.
// With --e2e-fake: then waits until the fake gateway has answered N requests and the last 256
// jobs submitted are terminal (as sy_bench_submit --e2e-fake does), and reports e2e jobs/s.
// --ids-out writes the job ids for the untimed check of every job (sy_bench_submit --verify).
import { writeFileSync } from 'node:fs';
import { Pool } from 'undici';
import { chatBody, closedLoop, parseArgs, printResult, waitEndToEnd } from './closed_loop.mjs';

const args = parseArgs();
const port = Number(args.port);
const n = Number(args.requests ?? 20000);
const clients = Number(args.connections ?? 64);
const fakePort = args['e2e-fake'] ? Number(args['e2e-fake']) : 0;
const tailCheck = 256;

const pool = new Pool(`http://127.0.0.1:${port}`, { connections: clients });
const ids = new Array(n).fill('');
const headers = { 'content-type': 'application/json' };

const r = await closedLoop({
  n,
  clients,
  submit: async (i) => {
    const body = JSON.stringify({ endpoint: '/v1/chat/completions', body: chatBody(i) });
    const res = await pool.request({ method: 'POST', path: '/v1/jobs', headers, body });
    const answer = await res.body.json();
    if (res.statusCode !== 202) return false;
    ids[i] = answer.id;
    return true;
  },
});

const terminal = new Set(['completed', 'failed', 'cancelled', 'expired']);
let extra = {};
if (fakePort) {
  // The tail check walks the last submitted ids in order, one GET at a time, like load_submit.
  const tail = ids.slice(Math.max(0, n - tailCheck)).filter((id) => id !== '');
  let at = 0;
  const e = await waitEndToEnd({
    start: r.start,
    n,
    fakePort,
    allDone: async () => {
      while (at < tail.length) {
        const res = await pool.request({ method: 'GET', path: `/v1/jobs/${tail[at]}` });
        const job = await res.body.json();
        if (res.statusCode !== 200 || !terminal.has(job.status)) return false;
        at++;
      }
      return true;
    },
  });
  console.log(`  end to end: last job terminal ${e.e2eSecs.toFixed(3)} s after the first submit`);
  extra = {
    e2e_s: e.e2eSecs.toFixed(3),
    e2e_jobs_per_s: Math.round(n / e.e2eSecs),
    fake_all_s: e.fakeAll.toFixed(3),
  };
}
if (args['ids-out']) {
  writeFileSync(args['ids-out'], ids.filter((id) => id !== '').join('\n') + '\n');
}
printResult('switchyard (undici) POST /v1/jobs', n, clients, r, extra);
await pool.close();
