// The settings the C++ harness (tests/system/js_clients_test.cpp) passes to every test file.
// Nothing is started here: the harness owns nats-server, the fake gateway and switchyard.

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; run these tests through js_clients_test`);
  return value;
}

export const NATS_URL = required('SY_NATS_URL');
export const BASE_URL = required('SY_BASE_URL'); // http://127.0.0.1:<port>, no trailing slash
export const API_KEY = process.env.SY_API_KEY ?? '';
export const WORKER_KEY = process.env.SY_WORKER_KEY ?? '';
export const MODEL = process.env.SY_MODEL ?? 'test-model';
export const SUBJECT_PREFIX = process.env.SY_SUBJECT_PREFIX ?? 'sy';
// The engine's webhook secret (the content of its webhook_secret_file), whsec_<base64>.
export const WEBHOOK_SECRET = process.env.SY_WEBHOOK_SECRET ?? '';

/// Resolves once `check()` returns a truthy value (which it returns), re-checking every 20 ms;
/// rejects after `deadlineMs`.
export async function waitFor(check, deadlineMs = 30_000, what = 'condition') {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/// GET /v1/jobs/{id} with the API key; returns the parsed job.
export async function getJob(id) {
  const res = await fetch(`${BASE_URL}/v1/jobs/${id}`, {
    headers: API_KEY ? { Authorization: `Bearer ${API_KEY}` } : {},
  });
  if (res.status !== 200) throw new Error(`GET /v1/jobs/${id}: ${res.status} ${await res.text()}`);
  return res.json();
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'expired']);

/// Polls the job until it is terminal; returns it.
export function waitTerminal(id, deadlineMs = 30_000) {
  return waitFor(async () => {
    const job = await getJob(id);
    return TERMINAL.has(job.status) ? job : null;
  }, deadlineMs, `job ${id} to finish`);
}
