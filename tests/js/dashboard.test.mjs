// The web dashboard (api/ui/, served at /ui/) in a real Chromium driven by playwright-core:
// sign-in, the overview's queue row from /metrics, a batch whose progress moves on screen
// without a reload, a job whose badge follows its event stream through a cancel, the jobs list
// and its status filter, a task list's task found by its custom_id, and an API error in the
// banner. Every wait has a deadline (no fixed sleeps), and a console error on the page fails
// the test: CSP violations are reported there.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

import { API_KEY, BASE_URL, MODEL, waitTerminal } from './env.mjs';

const METRICS_KEY = process.env.SY_METRICS_KEY ?? '';
const SHOTS = process.env.SY_SCREENSHOT_DIR ?? path.join(os.tmpdir(), 'switchyard-dashboard');
const CHROMIUM = process.env.SY_CHROMIUM ?? '/usr/bin/chromium';
const ENDPOINT = '/v1/chat/completions';

let browser;
let page;
const consoleErrors = []; // {text, url} of every console error and uncaught page error

/// A JSON call to the API with the client key; returns the parsed body, throws on non-2xx.
async function api(method, route, body, headers = {}) {
  const res = await fetch(`${BASE_URL}${route}`, {
    method,
    headers: { ...(API_KEY ? { Authorization: `Bearer ${API_KEY}` } : {}),
      ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${route}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/// A chat request the fake gateway answers after `latencyMs`.
function chat(content, latencyMs) {
  return { model: MODEL, messages: [{ role: 'user', content }], fake: { latency_ms: latencyMs } };
}

/// Uploads `text` as a batch input file (multipart, purpose=batch); returns the file object.
async function uploadBatchFile(text) {
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([text], { type: 'application/jsonl' }), 'dashboard.jsonl');
  const res = await fetch(`${BASE_URL}/v1/files`, {
    method: 'POST', headers: API_KEY ? { Authorization: `Bearer ${API_KEY}` } : {}, body: form,
  });
  const out = await res.text();
  assert.equal(res.status, 200, `POST /v1/files: ${out}`);
  return JSON.parse(out);
}

async function screenshot(name) {
  await page.screenshot({ path: path.join(SHOTS, name) });
}

/// Fails with the page's console errors, except those `allowed(error)` accepts.
function assertNoConsoleErrors(allowed = () => false) {
  const unexpected = consoleErrors.filter((e) => !allowed(e));
  consoleErrors.length = 0;
  assert.deepEqual(unexpected, [],
    `the page logged errors:\n${JSON.stringify(unexpected, null, 2)}`);
}

/// Marks the document; `assertSameDocument` then proves no reload happened in between.
const markDocument = () => page.evaluate(() => { window.__dashboardMark = 'same-document'; });
async function assertSameDocument(what) {
  assert.equal(await page.evaluate(() => window.__dashboardMark), 'same-document',
    `the page reloaded while ${what}`);
}

const byTestId = (id, attrs = '') => page.locator(`[data-testid="${id}"]${attrs}`);

/// Waits for the locator to be visible, failing with `what` and the page's current state.
async function see(locator, what, timeout = 15_000) {
  try {
    await locator.waitFor({ timeout });
  } catch {
    const status = await byTestId('job-status').getAttribute('data-status', { timeout: 100 })
      .catch(() => null);
    const stream = await byTestId('stream-state').textContent({ timeout: 100 }).catch(() => null);
    const banner = await byTestId('error-banner').textContent({ timeout: 100 }).catch(() => null);
    throw new Error(`did not see ${what} within ${timeout} ms (badge: ${status}, stream: ` +
      `${stream}, banner: ${banner || 'none'})`);
  }
}

before(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  assert.ok(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM} (set SY_CHROMIUM)`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 },
    acceptDownloads: true });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('console', (msg) => {
    if (msg.type() === 'error') consoleErrors.push({ text: msg.text(), url: msg.location().url });
  });
  page.on('pageerror', (err) => consoleErrors.push({ text: `uncaught: ${err.message}`, url: '' }));
});

after(async () => {
  await browser?.close();
});

test('sign-in shows the overview with a queue row for the model', { timeout: 60_000 }, async () => {
  // Work first: a model's queue and its instruments appear with its first job.
  const warm = await api('POST', '/v1/jobs', { endpoint: ENDPOINT, body: chat('warm up', 0) },
    { Prefer: 'wait=30' });
  assert.equal(warm.status, 'completed');

  const res = await page.goto(`${BASE_URL}/ui/`);
  assert.equal(res.status(), 200, `GET /ui/ answered ${res.status()}`);
  // Without the header a CSP violation could not show up in the console, which this test reads.
  assert.match(res.headers()['content-security-policy'] ?? '', /default-src 'self'/,
    'GET /ui/ has no Content-Security-Policy');
  await byTestId('signin-form').waitFor();
  await byTestId('signin-api-key').fill(API_KEY);
  await byTestId('signin-metrics-key').fill(METRICS_KEY);
  await byTestId('signin-submit').click();
  await byTestId('nav-jobs').waitFor();
  const row = byTestId('queue-row', `[data-queue="${MODEL}"]`);
  await row.waitFor();
  assert.equal(await byTestId('metrics-notice').isHidden(), true,
    'the overview cannot read /metrics');
  const limit = await row.locator('[data-testid="queue-inflight"]').getAttribute('data-limit');
  assert.ok(Number(limit) > 0, `the model's concurrency limit shown: ${limit}`);
  assert.equal(await byTestId('error-banner').isHidden(), true,
    await byTestId('error-banner').innerText());
  assertNoConsoleErrors();
});

test('a batch\'s progress moves on screen without a reload', { timeout: 120_000 }, async () => {
  // 30 lines, line i answered after 250*i ms: with 10 requests per model at once the batch
  // takes about 11 s, so the 2 s polling sees its count grow several times.
  const lines = Array.from({ length: 30 }, (_, i) => JSON.stringify({
    custom_id: `dash-${i}`, method: 'POST', url: ENDPOINT, body: chat(`line ${i}`, 250 * i),
  }));
  const file = await uploadBatchFile(`${lines.join('\n')}\n`);
  const batch = await api('POST', '/v1/batches', { input_file_id: file.id, endpoint: ENDPOINT,
    completion_window: '24h', metadata: { source: 'dashboard test' } });

  await byTestId('nav-batches').click();
  await byTestId('batch-row', `[data-batch-id="${batch.id}"]`).locator('a').click();
  await byTestId('batch-status').waitFor();
  await markDocument();

  const completed = async () =>
    Number(await byTestId('batch-progress').getAttribute('data-completed'));
  const seen = [await completed()];
  for (let step = 0; step < 2; step++) {
    await page.waitForFunction((prev) => Number(document.querySelector(
      '[data-testid="batch-progress"]')?.dataset.completed) > prev, seen.at(-1),
    { timeout: 30_000, polling: 100 }).catch(() => {
      throw new Error(`the completed count shown did not grow past ${seen.at(-1)} (seen ${seen})`);
    });
    seen.push(await completed());
  }
  assert.equal(await byTestId('batch-progress').getAttribute('data-total'), '30');
  const shown = Number(/^(\d+) \/ 30/.exec(await byTestId('batch-count').innerText())?.[1]);
  assert.ok(shown >= seen.at(-1), `the count shown (${shown}) is behind ${seen.at(-1)}`);
  await assertSameDocument('the batch ran');
  await screenshot('batch.png');

  // To the end: completed, and the output downloads through the key-carrying button.
  await byTestId('batch-status', '[data-status="completed"]').waitFor({ timeout: 60_000 });
  assert.equal(await byTestId('batch-progress').getAttribute('data-completed'), '30');
  const [download] = await Promise.all([page.waitForEvent('download'),
    byTestId('download-output').click()]);
  const out = fs.readFileSync(await download.path(), 'utf8').split('\n').filter(Boolean);
  assert.equal(out.length, 30, 'the downloaded output file has one line per request');
  assert.equal(JSON.parse(out[0]).response.status_code, 200);
  assertNoConsoleErrors();
});

let cancelledJob; // set by the cancel test once the job is cancelled

test('a job\'s badge follows its event stream through a cancel', { timeout: 60_000 }, async () => {
  const slowJob = await api('POST', '/v1/jobs', { endpoint: ENDPOINT, body: chat('slow', 60_000),
    metadata: { source: 'dashboard test' } });

  // Opened through the search box, which takes a job id.
  await byTestId('nav-jobs').click();
  await byTestId('jobs-search').fill(slowJob.id);
  await byTestId('jobs-search').press('Enter');
  await see(byTestId('job-status', '[data-status="in_progress"]'), 'the badge in_progress', 20_000);
  await see(byTestId('event', '[data-state="in_progress"]'), 'the in_progress event');
  await markDocument();

  await byTestId('job-cancel').click();
  // The answer to the cancel is `cancelling`; `cancelled` arrives only on the event stream.
  await see(byTestId('job-status', '[data-status="cancelled"]'),
    'the badge turn cancelled without a reload', 20_000);
  await see(byTestId('event', '[data-state="cancelled"]'), 'the cancelled event');
  assert.equal(await byTestId('job-cancel').isHidden(), true,
    'Cancel is offered on a cancelled job');
  await assertSameDocument('the job was cancelled');
  await screenshot('job-cancelled.png');
  assert.equal((await api('GET', `/v1/jobs/${slowJob.id}`)).status, 'cancelled');
  cancelledJob = slowJob;
  assertNoConsoleErrors();
});

test('the jobs list shows the job and filters it by status', { timeout: 60_000 }, async () => {
  assert.ok(cancelledJob, 'needs the job the previous test cancelled');
  const slowJob = cancelledJob;
  await byTestId('nav-jobs').click();
  await byTestId('job-row', `[data-job-id="${slowJob.id}"]`).waitFor();

  await byTestId('jobs-status-filter').selectOption('cancelled');
  const filtered = page.locator('[data-testid="jobs-table"][data-filter="cancelled"]');
  await filtered.locator(`[data-testid="job-row"][data-job-id="${slowJob.id}"]`).waitFor();
  const statuses = await filtered.locator('[data-testid="job-row-status"]')
    .evaluateAll((els) => els.map((e) => e.dataset.status));
  assert.ok(statuses.length > 0 && statuses.every((s) => s === 'cancelled'),
    `statuses under the cancelled filter: ${statuses}`);
  await screenshot('jobs.png');

  await byTestId('nav-overview').click();
  await byTestId('queue-row', `[data-queue="${MODEL}"]`).waitFor();
  await page.locator('svg.spark polyline').first().waitFor(); // two scrapes or more: rates drawn
  await screenshot('overview.png');
  assertNoConsoleErrors();
});

test('a task list\'s page finds a task by its custom_id', { timeout: 60_000 }, async () => {
  const tasks = ['alpha', 'beta', 'gamma'].map((key) => ({ custom_id: `dash-task-${key}`,
    body: chat(`task ${key}`, 0) }));
  const list = await waitTerminal((await api('POST', '/v1/jobs', { endpoint: ENDPOINT, tasks })).id);
  assert.equal(list.status, 'completed', JSON.stringify(list));
  await page.evaluate((id) => { location.hash = `#/jobs/${id}`; }, list.id);
  await see(byTestId('task-progress', '[data-completed="3"]'), 'the list\'s counts 3 of 3');
  // The counts come with the job, the rows with their own request: wait for the rows.
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="task-row"]').length
    === 3, null, { timeout: 15_000, polling: 100 });
  await byTestId('tasks-search').fill('dash-task-beta');
  await byTestId('tasks-search').press('Enter');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="task-row"]').length
    === 1, null, { timeout: 15_000, polling: 100 });
  assert.match(await byTestId('task-row').innerText(), /dash-task-beta/);
  assertNoConsoleErrors();
});

test('an API error is shown in the banner', { timeout: 30_000 }, async () => {
  const missing = 'job_01AAAAAAAAAAAAAAAAAAAAAAAA';
  await page.evaluate((id) => { location.hash = `#/jobs/${id}`; }, missing);
  await byTestId('error-code').filter({ hasText: '404 job_not_found' }).waitFor();
  assert.match(await byTestId('error-banner').innerText(), /job_not_found/);
  // Chromium logs the 404 answers themselves; nothing else may appear.
  assertNoConsoleErrors((e) => e.url.includes(missing) && /status of 404/.test(e.text));
});
