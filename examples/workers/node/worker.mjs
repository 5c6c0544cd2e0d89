#!/usr/bin/env node
// An example Switchyard worker: Node 18 or later, no npm dependencies (global fetch, node:crypto,
// node:http/https).
//
// It leases tasks of one runtime from the engine's internal listener, runs a demo piece of work,
// heartbeats while it works and reports the result. Read it as documentation of the worker
// protocol (examples/workers/README.md); replace `doWork` with your own work.
//
// Demo work, on the task's `input` object:
//   {"text": "hi"}       -> output {"text": "HI", "length": 2}   (length in Unicode code points)
//   {"fail": "why"}      -> fail with code "demo_failure", not retryable
//   {"sleep_ms": 5000}   -> sleep that long first, heartbeating meanwhile
//   {"text": "hi", "write_to": "s3://bucket/some/key.txt"}
//                        -> also store "HI" (UTF-8) in that S3 object, then output
//                           {"text": "HI", "length": 2, "written": "s3://bucket/some/key.txt",
//                            "credentials_expire": "<ISO 8601>"}
//
// The write_to demo shows storage credentials: the job must have been submitted with a grant
// covering the object (e.g. "grants": {"write": ["s3://bucket/some/"]}). The worker asks the
// engine for short-lived S3 credentials limited to the job's grants (POST /v1/task/credentials
// with the attempt's current token), then PUTs the object itself, signed with AWS Signature
// Version 4 (`sigv4Authorization`, no SDK). The secret key and session token never appear in the
// output or the logs. Failures: a write_to that is not s3://bucket/key -> "bad_input"; the engine
// cannot mint credentials -> "credentials_unavailable" (retryable); the task has no grants ->
// "invalid_grants"; S3 refuses the PUT -> "storage_write_failed" (retryable on 5xx or no answer,
// not on 403).
//
// Usage:
//   SWITCHYARD_WORKER_KEY=... node worker.mjs --runtime demo --concurrency 4
//
// Logs are one JSON object per line on stderr. SIGTERM or SIGINT: finish the tasks in hand, lease
// no more, exit 0; a second signal exits at once (the engine re-runs those tasks after their
// lease expires).
//
// Concurrency here is N async loops on one event loop, not threads: the work must not block.

import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { parseArgs } from 'node:util';

const CAPABILITY_HEADER = 'X-Switchyard-Task-Capability';
// Extra time the HTTP client waits beyond a lease's long-poll before giving up on the engine.
const HTTP_TIMEOUT_MS = 10_000;
// With --wait-ms 0 an empty lease answer comes back at once; pause before asking again.
const EMPTY_POLL_PAUSE_MS = 1_000;
// How long an S3 request (the write_to demo) may take.
const S3_TIMEOUT_MS = 30_000;

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

  // heartbeat, credentials, complete or fail: authorised by the attempt's capability token alone.
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

// --- S3: AWS Signature Version 4 and PUT Object -------------------------------------------------

const sha256Hex = (data) => createHash('sha256').update(data).digest('hex');
const hmacSha256 = (key, data) => createHmac('sha256', key).update(data).digest();

// The `Authorization` header value of an AWS Signature Version 4 request.
//
// `headers` are the headers to sign, name -> value; they must include Host and x-amz-date (and
// x-amz-content-sha256 for S3), and the request must send exactly these values. `canonicalUri` is
// the path as sent, already URI-encoded (`s3ObjectPath`); `canonicalQuery` the sorted, encoded
// query string ('' for none); `payloadSha256` the hex SHA-256 of the body; `amzDate` the
// x-amz-date value, YYYYMMDD'T'HHMMSS'Z' in UTC.
function sigv4Authorization({
  method, canonicalUri, canonicalQuery, headers, payloadSha256,
  accessKeyId, secretAccessKey, region, service, amzDate,
}) {
  // 1. The canonical request: method, path, query, the signed headers (lower-case names, sorted,
  //    values trimmed with inner runs of spaces collapsed, one "name:value\n" each), a blank line
  //    ending them, the list of signed header names, and the payload's hash.
  const signed = Object.entries(headers)
    .map(([name, value]) => [name.toLowerCase(), String(value).trim().replace(/\s+/g, ' ')])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const signedNames = signed.map(([name]) => name).join(';');
  const canonicalRequest = [
    method,
    canonicalUri,
    canonicalQuery,
    signed.map(([name, value]) => `${name}:${value}\n`).join(''),
    signedNames,
    payloadSha256,
  ].join('\n');
  // 2. The string to sign: the algorithm, the time, the credential scope (the day, region and
  //    service the signature is valid for) and the hash of the canonical request.
  const day = amzDate.slice(0, 8);
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  // 3. The signing key: an HMAC-SHA256 chain from the secret over the scope's parts.
  let key = hmacSha256(`AWS4${secretAccessKey}`, day);
  key = hmacSha256(key, region);
  key = hmacSha256(key, service);
  key = hmacSha256(key, 'aws4_request');
  // 4. The signature: HMAC of the string to sign with that key, in hex.
  const signature = createHmac('sha256', key).update(stringToSign).digest('hex');
  return `AWS4-HMAC-SHA256 Credential=${accessKeyId}/${scope}, `
    + `SignedHeaders=${signedNames}, Signature=${signature}`;
}

// {bucket, key} of "s3://bucket/key", both non-empty; null for anything else.
function parseS3Url(url) {
  if (typeof url !== 'string' || !url.startsWith('s3://')) return null;
  const rest = url.slice('s3://'.length);
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return null;
  return { bucket: rest.slice(0, slash), key: rest.slice(slash + 1) };
}

// One path segment URI-encoded as SigV4 wants it: every byte but the unreserved
// A-Z a-z 0-9 - . _ ~ as %XX (UTF-8, upper-case hex). encodeURIComponent also keeps ! ' ( ) *.
const uriEncode = (segment) => encodeURIComponent(segment)
  .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

// The path-style path of an object, '/' kept between segments. Encoded once: S3 signs the path as
// sent, not double-encoded.
const s3ObjectPath = (basePath, bucket, key) => `${basePath.replace(/\/+$/, '')}/`
  + [bucket, ...key.split('/')].map(uriEncode).join('/');

// PUTs `body` (a Buffer) as s3://bucket/key with the minted `credentials`. Resolves to
// {status, code}: `code` is S3's error Code (or undefined); status 0 means no answer, and then
// `code` says why.
async function s3PutObject(credentials, bucket, key, body) {
  let endpoint;
  try {
    endpoint = new URL(credentials.endpoint);
  } catch {
    endpoint = null;
  }
  if (!endpoint || !['http:', 'https:'].includes(endpoint.protocol)) {
    return { status: 0, code: `unusable S3 endpoint ${JSON.stringify(credentials.endpoint)}` };
  }
  const path = s3ObjectPath(endpoint.pathname, bucket, key);
  const payloadSha256 = sha256Hex(body);
  const amzDate = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const signed = {
    host: endpoint.host, // host[:port], as the request sends it
    'x-amz-content-sha256': payloadSha256,
    'x-amz-date': amzDate,
  };
  if (credentials.session_token) { // temporary credentials: always, from the engine
    signed['x-amz-security-token'] = credentials.session_token;
  }
  const authorization = sigv4Authorization({
    method: 'PUT', canonicalUri: path, canonicalQuery: '', headers: signed, payloadSha256,
    accessKeyId: credentials.access_key_id, secretAccessKey: credentials.secret_access_key,
    region: credentials.region, service: 's3', amzDate,
  });
  // node:http rather than fetch: the Host header must be exactly the one signed.
  const client = endpoint.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    const req = client.request(endpoint, {
      method: 'PUT',
      path,
      headers: {
        ...signed,
        authorization,
        'content-type': 'text/plain; charset=utf-8', // not signed: S3 allows that
        'content-length': body.length,
      },
      signal: AbortSignal.timeout(S3_TIMEOUT_MS),
    }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('error', (e) => resolve({ status: 0, code: String(e) }));
      res.on('end', () => {
        if (res.statusCode >= 200 && res.statusCode < 300) {
          resolve({ status: res.statusCode });
          return;
        }
        // An S3 error body is XML: <Error><Code>AccessDenied</Code>...</Error>.
        const match = /<Code>([^<]*)<\/Code>/.exec(Buffer.concat(chunks).toString('utf8'));
        resolve({ status: res.statusCode, code: match?.[1] });
      });
    });
    req.on('error', (e) => resolve({ status: 0, code: String(e) }));
    req.end(body);
  });
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
// `mintCredentials()` asks the engine for the attempt's storage credentials: it resolves to them,
// throws WorkError, or resolves to undefined when the attempt was lost.
async function doWork(input, interrupted, mintCredentials) {
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
  const output = { text: text.toUpperCase(), length: [...text].length };
  if (!('write_to' in input)) return output;

  // The write_to demo: store the output text in S3 with credentials minted for this attempt.
  const writeTo = input.write_to;
  const target = parseS3Url(writeTo);
  if (!target) throw new WorkError('bad_input', 'write_to must be s3://bucket/key', false);
  const loneSurrogate = /\p{Cs}/u; // "\ud800" in the JSON: not valid Unicode, no UTF-8 for it
  if (loneSurrogate.test(text) || loneSurrogate.test(target.key)) {
    throw new WorkError('bad_input', 'text and write_to must be valid Unicode', false);
  }
  const credentials = await mintCredentials();
  if (credentials === undefined || interrupted.aborted) return undefined;
  const { status, code } = await s3PutObject(credentials, target.bucket, target.key,
    Buffer.from(output.text, 'utf8'));
  if (status === 0) {
    throw new WorkError('storage_write_failed', `S3 PUT ${writeTo}: no answer: ${code}`, true);
  }
  if (status < 200 || status >= 300) {
    throw new WorkError('storage_write_failed',
      `S3 PUT ${writeTo}: HTTP ${status}${code ? ` ${code}` : ''}`,
      isTransient(status)); // 403 and other 4xx would fail again
  }
  return { ...output, written: writeTo, credentials_expire: credentials.expiration ?? null };
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
    this.calls = Promise.resolve(); // the tail of oneAtATime's queue
  }

  // Runs `call` after the calls queued before it. A heartbeat holds the queue until it has stored
  // its fresh token, and so does a credentials call, so that the work never sends a token a
  // heartbeat is replacing at that moment.
  oneAtATime(call) {
    const run = this.calls.then(call);
    this.calls = run.catch(() => {});
    return run;
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
    const { status, body } = await att.oneAtATime(async () => {
      const answer = await engine.taskCall('/v1/task/heartbeat', att.token, {});
      if (answer.status === 200) att.renew(answer.body.capability_token);
      return answer;
    });
    if (status === 200) {
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

// POST /v1/task/credentials with the attempt's current token: short-lived S3 credentials
// (access_key_id, secret_access_key, session_token, expiration, endpoint, region) that reach only
// the job's grants. Resolves to them, or to undefined when the attempt was lost (409/401: stop, as
// after a heartbeat), or throws WorkError. Never log the secret or the session token.
async function mintCredentials(engine, att) {
  const { status, body } = await att.oneAtATime(
    () => engine.taskCall('/v1/task/credentials', att.token, {}));
  if (status === 200) {
    log('info', 'storage credentials minted', {
      expiration: body.expiration, endpoint: body.endpoint, ...att.fields(),
    });
    return body;
  }
  const code = errorCode(body);
  if (isLost(status)) {
    log('warn', 'attempt lost, dropping its work', {
      call: '/v1/task/credentials', status, code, ...att.fields(),
    });
    att.lost = true;
    att.interrupt.abort();
    return undefined;
  }
  const message = body?.error?.message;
  const why = `no storage credentials: HTTP ${status}${code ? ` ${code}` : ''}`
    + `${message ? `: ${message}` : ''}`;
  // 502 credentials_unavailable (no STS, or STS failed), other 5xx, no answer: another attempt.
  if (isTransient(status)) throw new WorkError('credentials_unavailable', why, true);
  // 400 invalid_grants: the job was submitted without grants; another attempt would not help.
  throw new WorkError(code ?? 'credentials_refused', why, false);
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
    output = await doWork(att.input, att.interrupt.signal, () => mintCredentials(engine, att));
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
