// The engine's NATS micro service (docs/nats.md, "Request-reply service") as a Node.js client
// uses it, with the official `nats` package: discovery through its service client ($SRV.PING,
// INFO, STATS), a job created by a plain request() on <prefix>.api.jobs.create and answered after
// the commit, and a worker that leases, heartbeats and completes over <prefix>.task.* — the
// job's result is then the worker's output, over HTTP too.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, headers, JSONCodec } from 'nats';

import { API_KEY, NATS_URL, SUBJECT_PREFIX, WORKER_KEY, waitFor, waitTerminal } from './env.mjs';

const jc = JSONCodec();
let nc;

before(async () => {
  nc = await connect({ servers: NATS_URL, name: 'service.test.mjs' });
});

after(async () => {
  await nc?.drain();
});

/// One request on <prefix>.<what> with JSON and headers; { error, code, body }.
async function call(what, body, hdrs = {}) {
  const h = headers();
  for (const [k, v] of Object.entries(hdrs)) h.set(k, v);
  const m = await nc.request(`${SUBJECT_PREFIX}.${what}`, jc.encode(body), {
    headers: h,
    timeout: 20_000,
  });
  return {
    error: m.headers?.get('Nats-Service-Error') || '',
    code: m.headers?.get('Nats-Service-Error-Code') || '',
    body: jc.decode(m.data),
  };
}

const asClient = { Authorization: `Bearer ${API_KEY}` };
const asWorker = { Authorization: `Bearer ${WORKER_KEY}` };

test('the service is found by discovery with its endpoints', async () => {
  const svc = nc.services.client();
  const pings = [];
  for await (const p of await svc.ping('switchyard')) pings.push(p);
  assert.equal(pings.length, 1);
  assert.equal(pings[0].name, 'switchyard');
  const infos = [];
  for await (const i of await svc.info('switchyard')) infos.push(i);
  const subjects = infos[0].endpoints.map((e) => e.subject).sort();
  assert.deepEqual(subjects, [
    `${SUBJECT_PREFIX}.api.jobs.create`,
    `${SUBJECT_PREFIX}.task.complete`,
    `${SUBJECT_PREFIX}.task.credentials`,
    `${SUBJECT_PREFIX}.task.fail`,
    `${SUBJECT_PREFIX}.task.heartbeat`,
    `${SUBJECT_PREFIX}.task.lease`,
  ]);
});

test('a job created over NATS is leased, heartbeated and completed by a NATS worker', async () => {
  const created = await call('api.jobs.create', { runtime: 'demo', input: { n: 41 } }, asClient);
  assert.equal(created.error, '');
  assert.equal(created.body.object, 'job');
  assert.equal(created.body.runtime, 'demo');
  const id = created.body.id;
  const task = await waitFor(async () => {
    const r = await call('task.lease', { runtime: 'demo', wait_ms: 1000 }, asWorker);
    assert.equal(r.error, '', JSON.stringify(r.body));
    return r.body.tasks.find((t) => t.job_id === id);
  });
  assert.deepEqual(task.input, { n: 41 });
  const cap = 'X-Switchyard-Task-Capability';
  // The job has no storage grants: credentials are refused with the reason, over NATS as over HTTP.
  const creds = await call('task.credentials', {}, { [cap]: task.capability_token });
  assert.equal(creds.code, '400');
  assert.equal(creds.body.error.code, 'invalid_grants');
  const hb = await call('task.heartbeat', {}, { [cap]: task.capability_token });
  assert.equal(hb.error, '');
  assert.equal(hb.body.cancel_requested, false);
  const done = await call('task.complete', { output: { n: 42 } }, { [cap]: hb.body.capability_token });
  assert.deepEqual(done.body, { recorded: true });
  const job = await waitTerminal(id);
  assert.equal(job.status, 'completed');
  assert.deepEqual(job.result.body, { n: 42 });
  // The same attempt again is refused: exactly one outcome per attempt.
  const again = await call('task.complete', { output: 0 }, { [cap]: hb.body.capability_token });
  assert.equal(again.code, '409');
  assert.equal(again.body.error.code, 'stale_attempt');
});

test('errors come back as the error envelope with the service error headers', async () => {
  const noKey = await call('api.jobs.create', { runtime: 'demo', input: 1 });
  assert.equal(noKey.code, '401');
  assert.equal(noKey.body.error.code, 'missing_api_key');
  const unknown = await call('api.jobs.create', { runtime: 'nope', input: 1 }, asClient);
  assert.equal(unknown.code, '404');
  assert.equal(unknown.body.error.code, 'runtime_not_found');
  const clientLeasing = await call('task.lease', { runtime: 'demo' }, asClient);
  assert.equal(clientLeasing.code, '401');
  const forged = await call('task.complete', { output: 1 }, {
    'X-Switchyard-Task-Capability': 'a.b.c',
  });
  assert.equal(forged.code, '401');
  assert.equal(forged.body.error.code, 'invalid_capability_token');
  const stats = [];
  for await (const s of await nc.services.client().stats('switchyard')) stats.push(s);
  const create = stats[0].endpoints.find((e) => e.name === 'jobs_create');
  assert.ok(create.num_requests >= 3);
  assert.ok(create.num_errors >= 2);
});
