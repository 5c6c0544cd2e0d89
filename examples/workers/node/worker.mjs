#!/usr/bin/env node
// An example Switchyard worker: Node 18 or later, no npm dependencies (global fetch).
//
// It leases tasks of one runtime from the engine's internal listener, runs a demo piece of work,
// heartbeats while it works and reports the result. Read it as documentation of the worker
// protocol (examples/workers/README.md); replace `doWork` with your own work.
//
// Demo work, on the task's `input` object:
//   {"text": "hi"}       -> output {"text": "HI", "length": 2}   (length in Unicode code points)
//   {"fail": "why"}      -> fail with code "demo_failure", not retryable
//   {"sleep_ms": 5000}   -> sleep that long first, heartbeating meanwhile
//
// Usage:
//   SWITCHYARD_WORKER_KEY=... node worker.mjs --runtime demo --concurrency 4
//
// Logs are one JSON object per line on stderr. SIGTERM or SIGINT: finish the tasks in hand, lease
// no more, exit 0; a second signal exits at once (the engine re-runs those tasks after their
// lease expires).
//
// Concurrency here is N async loops on one event loop, not threads: the work must not block.

import { parseArgs } from 'node:util';

const CAPABILITY_HEADER = 'X-Switchyard-Task-Capability';
// Extra time the HTTP client waits beyond a lease's long-poll before giving up on the engine.
const HTTP_TIMEOUT_MS = 10_000;
// With --wait-ms 0 an empty lease answer comes back at once; pause before asking again.
const EMPTY_POLL_PAUSE_MS = 1_000;

// --- logging: one JSON object per line on stderr -----------------------------------------------

function log(level, msg, fields = {}) {
  const record = { ts: new Date().toISOString(), level, msg, ...fields };
  process.stderr.write(JSON.stringify(record) + '\n');
}

// Resolves after `ms`, or early when `signal` aborts; the result says whether it aborted.
function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(true);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(false);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

// --- HTTP --------------------------------------------------------------------------------------

// The `code` of an OpenAI-style error envelope, or undefined.
const errorCode = (body) => body?.error?.code;

// Worth retrying: no answer at all (status 0), a server error, or 429.
const isTransient = (status) => status === 0 || status === 429 || status >= 500;

// The engine says this attempt is no longer ours: 409 (`stale_attempt`, `lease_expired`) or 401
// (`invalid_capability_token`). Stop working on it and never retry the call.
const isLost = (status) => status === 401 || status === 409;

// The internal listener's task API. Every call resolves to {status, body}; status 0 means no
// answer (connection refused or reset, timeout).
class Engine {
  constructor(baseUrl, workerKey) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.workerKey = workerKey;
  }

  lease(runtime, maxTasks, waitMs) {
    const headers = this.workerKey ? { Authorization: `Bearer ${this.workerKey}` } : {};
    const body = { runtime, max_tasks: maxTasks, wait_ms: waitMs };
    return this.#post('/v1/task/lease', body, headers, waitMs + HTTP_TIMEOUT_MS);
  }

  // heartbeat, complete or fail: authorised by the attempt's capability token alone.
  taskCall(path, token, body) {
    return this.#post(path, body, { [CAPABILITY_HEADER]: token }, HTTP_TIMEOUT_MS);
  }

  async #post(path, body, headers, timeoutMs) {
    try {
      const res = await fetch(this.baseUrl + path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      let parsed = null;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: keep null
      }
      return { status: res.status, body: parsed };
    } catch (e) {
      const message = String(e?.cause ?? e);
      return { status: 0, body: { error: { message, code: 'connection_error' } } };
    }
  }
}

// --- the demo work -----------------------------------------------------------------------------

// The work failed; reported with `/v1/task/fail`.
class WorkError extends Error {
  constructor(code, message, retryable) {
    super(message);
    this.code = code;
    this.retryable = retryable;
  }
}

// Runs the demo work and resolves to its output (any JSON value), throws WorkError, or resolves
// to undefined when `interrupted` (an AbortSignal) aborted meanwhile: cancelled, or lost.
async function doWork(input, interrupted) {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new WorkError('bad_input', 'input must be a JSON object', false);
  }
  const sleepMs = input.sleep_ms ?? 0;
  if (typeof sleepMs !== 'number' || !(sleepMs >= 0)) {
    throw new WorkError('bad_input', 'sleep_ms must be a non-negative number', false);
  }
  // Long work must check for interruption now and then; here, the sleep ends early on abort.
  if (await sleep(sleepMs, interrupted)) return undefined;

  if ('fail' in input) throw new WorkError('demo_failure', String(input.fail), false);

  const text = input.text ?? '';
  if (typeof text !== 'string') throw new WorkError('bad_input', 'text must be a string', false);
  return { text: text.toUpperCase(), length: [...text].length };
}

// --- one attempt: heartbeat while working, then report -----------------------------------------

// One leased attempt of a task: its current token, when its lease ends, and why to stop.
class Attempt {
  constructor(task) {
    this.taskId = task.task_id;
    this.jobId = task.job_id;
    this.attempt = task.attempt;
    this.input = task.input;
    this.leaseTtlMs = task.lease_ttl_ms;
    this.token = task.capability_token;
    this.renew(this.token);
    this.cancelled = false; // the engine asked us to stop (cancel_requested)
    this.lost = false; // 409/401: the attempt is no longer ours
    this.interrupt = new AbortController(); // either of the two: the work should stop
  }

  renew(token) {
    this.token = token; // the old token may be refused from now on
    // The local monotonic clock, not lease_expires_at: the engine's clock and ours may differ.
    this.deadline = performance.now() + this.leaseTtlMs;
  }

  get msLeft() {
    return this.deadline - performance.now();
  }

  // Log fields naming this attempt.
  fields() {
    return { task_id: this.taskId, job_id: this.jobId, attempt: this.attempt };
  }
}

// Heartbeats every lease_ttl_ms/3 until `done` aborts or the attempt is lost. A failed heartbeat
// is retried at the next tick: two more tries remain before the lease expires.
async function heartbeatLoop(engine, att, done) {
  const intervalMs = att.leaseTtlMs / 3;
  while (!(await sleep(intervalMs, done))) {
    const { status, body } = await engine.taskCall('/v1/task/heartbeat', att.token, {});
    if (status === 200) {
      att.renew(body.capability_token);
      if (body.cancel_requested && !att.cancelled) {
        log('info', 'cancel requested', att.fields());
        att.cancelled = true;
        att.interrupt.abort();
      }
    } else if (isLost(status)) {
      log('warn', 'attempt lost, dropping its work', {
        status, code: errorCode(body), ...att.fields(),
      });
      att.lost = true;
      att.interrupt.abort();
      return;
    } else {
      log('warn', 'heartbeat failed, will retry', {
        status, code: errorCode(body), ...att.fields(),
      });
    }
  }
}

// Sends complete or fail. Retries transient errors with backoff until the lease would have
// expired. Resolves to {status, body} of the last answer.
async function report(engine, att, path, payload) {
  let backoffMs = 200;
  for (;;) {
    const { status, body } = await engine.taskCall(path, att.token, payload);
    if (status === 200 || isLost(status) || !isTransient(status)) return { status, body };
    const leftMs = att.msLeft;
    if (leftMs <= 0) {
      log('error', 'giving up: the lease has expired', { call: path, status, ...att.fields() });
      return { status, body };
    }
    const waitMs = Math.min(backoffMs, leftMs);
    log('warn', 'report failed, retrying', {
      call: path, status, code: errorCode(body), retry_in_ms: Math.round(waitMs), ...att.fields(),
    });
    await sleep(waitMs);
    backoffMs = Math.min(backoffMs * 2, 5_000);
  }
}

async function sendFail(engine, att, code, message, retryable) {
  const { status, body } = await report(engine, att, '/v1/task/fail', {
    error: { code, message }, retryable,
  });
  if (status === 200) {
    log('info', 'task failed', { code, retryable, ...att.fields() });
  } else if (isLost(status)) {
    log('warn', 'attempt lost before fail', { status, code: errorCode(body), ...att.fields() });
  } else {
    log('error', 'fail not accepted', { status, reply: body, ...att.fields() });
  }
}

async function sendComplete(engine, att, output, maxBodyBytes) {
  const payload = { output };
  const size = Buffer.byteLength(JSON.stringify(payload));
  if (size > maxBodyBytes) { // the engine would answer 413; say why instead
    await sendFail(engine, att, 'output_too_large',
      `output is ${size} bytes, the engine accepts ${maxBodyBytes}`, false);
    return;
  }
  const { status, body } = await report(engine, att, '/v1/task/complete', payload);
  if (status === 200) {
    log('info', 'task completed', { output_bytes: size, ...att.fields() });
  } else if (isLost(status)) {
    log('warn', 'attempt lost before complete', { status, code: errorCode(body), ...att.fields() });
  } else if (!isTransient(status)) { // refused (e.g. 400, 413): tell the engine, do not retry
    const message = body?.error?.message ?? `HTTP ${status}`;
    await sendFail(engine, att, 'output_rejected', `complete refused: ${message}`, false);
  }
}

async function runAttempt(engine, att, maxBodyBytes) {
  log('info', 'task leased', { lease_ttl_ms: att.leaseTtlMs, ...att.fields() });
  const done = new AbortController();
  const heartbeat = heartbeatLoop(engine, att, done.signal);
  let output;
  let failure;
  try {
    output = await doWork(att.input, att.interrupt.signal);
  } catch (e) {
    if (e instanceof WorkError) {
      failure = e;
    } else { // a bug in the work: let another attempt try
      log('error', 'work threw', { error: String(e), ...att.fields() });
      failure = new WorkError('worker_error', String(e), true);
    }
  } finally {
    // Stop heartbeating before reporting, so no heartbeat replaces the token mid-report.
    done.abort();
    await heartbeat;
  }

  if (att.lost) return; // already logged; another attempt may be running it now
  if (att.cancelled) {
    await sendFail(engine, att, 'cancelled', 'cancel requested', false);
  } else if (failure) {
    await sendFail(engine, att, failure.code, failure.message, failure.retryable);
  } else {
    await sendComplete(engine, att, output, maxBodyBytes);
  }
}

// --- leasing loop ------------------------------------------------------------------------------

// How many more tasks this process may lease (--max-tasks); null means no limit.
class Budget {
  constructor(limit) {
    this.left = limit;
  }

  take() {
    if (this.left === null) return true;
    if (this.left === 0) return false;
    this.left -= 1;
    return true;
  }

  giveBack() {
    if (this.left !== null) this.left += 1;
  }
}

// One worker loop: lease one task, run it to the end, repeat until told to stop.
async function leaseLoop(engine, opts, budget, state) {
  let backoffMs = 500;
  while (!state.stopping.signal.aborted && budget.take()) {
    const { status, body } = await engine.lease(opts.runtime, 1, opts.waitMs);
    if (status !== 200) {
      budget.giveBack();
      if (!isTransient(status)) { // bad key, unknown runtime...: retrying will not help
        log('error', 'lease refused', { status, reply: body });
        state.fatal = true;
        state.stopping.abort();
        return;
      }
      log('warn', 'lease failed, retrying', {
        status, code: errorCode(body), retry_in_ms: backoffMs,
      });
      await sleep(backoffMs, state.stopping.signal);
      backoffMs = Math.min(backoffMs * 2, 10_000);
      continue;
    }
    backoffMs = 500;
    const tasks = body?.tasks ?? [];
    if (tasks.length === 0) {
      budget.giveBack();
      if (opts.waitMs === 0) await sleep(EMPTY_POLL_PAUSE_MS, state.stopping.signal);
      continue;
    }
    // A task leased is ours even if a signal arrived meanwhile: run it to the end.
    for (const task of tasks) await runAttempt(engine, new Attempt(task), opts.maxBodyBytes);
  }
}

function parseOptions() {
  const env = process.env;
  const { values } = parseArgs({
    options: {
      url: { type: 'string', default: env.SWITCHYARD_INTERNAL_URL ?? 'http://127.0.0.1:8081' },
      runtime: { type: 'string', default: env.SWITCHYARD_RUNTIME ?? 'demo' },
      concurrency: { type: 'string', default: '4' },
      'max-tasks': { type: 'string' },
      'wait-ms': { type: 'string', default: '10000' },
      'max-body-bytes': { type: 'string', default: env.SWITCHYARD_MAX_BODY_BYTES ?? '1048576' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write('usage: worker.mjs [--url URL] [--runtime NAME] [--concurrency N]\n'
      + '                  [--max-tasks N] [--wait-ms 0..30000] [--max-body-bytes N]\n'
      + 'env: SWITCHYARD_INTERNAL_URL, SWITCHYARD_RUNTIME, SWITCHYARD_WORKER_KEY,\n'
      + '     SWITCHYARD_MAX_BODY_BYTES\n');
    process.exit(0);
  }
  const int = (name, min, max) => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < min || n > max) {
      process.stderr.write(`--${name} must be an integer in ${min}..${max}\n`);
      process.exit(2);
    }
    return n;
  };
  return {
    url: values.url,
    runtime: values.runtime,
    concurrency: int('concurrency', 1, 1000),
    maxTasks: values['max-tasks'] === undefined
      ? null : int('max-tasks', 1, Number.MAX_SAFE_INTEGER),
    waitMs: int('wait-ms', 0, 30000),
    maxBodyBytes: int('max-body-bytes', 1, Number.MAX_SAFE_INTEGER),
  };
}

async function main() {
  const opts = parseOptions();
  // The key comes from the environment only, so it does not show up in `ps`.
  const engine = new Engine(opts.url, process.env.SWITCHYARD_WORKER_KEY || null);
  const budget = new Budget(opts.maxTasks);
  const state = { stopping: new AbortController(), fatal: false };

  const onSignal = (name) => {
    if (state.stopping.signal.aborted) {
      log('warn', 'second signal, exiting now', { signal: name });
      process.exit(name === 'SIGINT' ? 130 : 143);
    }
    log('info', 'shutting down: finishing current tasks', { signal: name });
    state.stopping.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  log('info', 'worker started', {
    url: opts.url, runtime: opts.runtime, concurrency: opts.concurrency, max_tasks: opts.maxTasks,
  });
  const loops = [];
  for (let i = 0; i < opts.concurrency; i += 1) loops.push(leaseLoop(engine, opts, budget, state));
  await Promise.all(loops);
  log('info', 'worker stopped');
  // Exit explicitly: idle keep-alive connections must not hold the process open.
  process.exit(state.fatal ? 2 : 0);
}

main();
