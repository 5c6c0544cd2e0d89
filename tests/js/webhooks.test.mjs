// Job and batch webhooks as the official `openai` package verifies them (docs/webhooks.md): a
// batch's end is OpenAI's `batch.<status>` event; deliveries carry
// the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature), and
// `client.webhooks.unwrap()` accepts them with the engine's whsec_ secret — and refuses a
// tampered body, a delivery moved to another id, and another secret. The receiver is a node http
// server on 127.0.0.1 (the harness starts the engine with webhook_allow_loopback).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import OpenAI, { toFile } from 'openai';

import { API_KEY, BASE_URL, MODEL, WEBHOOK_SECRET, waitFor, waitTerminal } from './env.mjs';

const client = new OpenAI({ apiKey: 'unused', webhookSecret: WEBHOOK_SECRET });

/** Every POST the receiver got: the body exactly as received, and the headers as node gives them. */
const received = [];
let server;
let hookUrl;

before(async () => {
  server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${server.address().port}/hook`;
});

after(() => new Promise((resolve) => server.close(resolve)));

/** Submits a chat completion job with the receiver as its webhook; returns its id. */
async function submitHookedJob(content) {
  const res = await fetch(`${BASE_URL}/v1/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', Authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify({
      endpoint: '/v1/chat/completions',
      body: { model: MODEL, messages: [{ role: 'user', content }] },
      webhook_url: hookUrl,
    }),
  });
  const text = await res.text();
  assert.equal(res.status, 202, text);
  return JSON.parse(text).id;
}

/** Waits for the deliveries of `jobId` until one reports `state`; returns them all. */
function deliveriesOf(jobId, state) {
  return waitFor(() => {
    const mine = received.filter((d) => JSON.parse(d.body).job_id === jobId);
    return mine.some((d) => JSON.parse(d.body).state === state) ? mine : null;
  }, 30_000, `a ${state} webhook for ${jobId}`);
}

test('the engine secret is in the whsec_ form', () => {
  assert.match(WEBHOOK_SECRET, /^whsec_[A-Za-z0-9+/]+=*$/);
});

test('webhooks.unwrap accepts every delivery of a job', async () => {
  const id = await submitHookedJob('hooked from openai-node');
  assert.equal((await waitTerminal(id)).status, 'completed');
  const deliveries = await deliveriesOf(id, 'completed');
  assert.ok(deliveries.length >= 2, `got ${deliveries.length} deliveries`);
  const ids = new Set();
  for (const d of deliveries) {
    const event = await client.webhooks.unwrap(d.body, d.headers);
    assert.equal(event.job_id, id);
    assert.deepEqual(event, JSON.parse(d.body));
    assert.match(d.headers['webhook-id'], /^whd_/);
    assert.match(d.headers['webhook-timestamp'], /^[0-9]+$/);
    assert.ok(Math.abs(Date.now() / 1000 - Number(d.headers['webhook-timestamp'])) < 300);
    assert.match(d.headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
    // webhook_legacy_signature is true by default: the deprecated headers come along.
    assert.equal(d.headers['x-switchyard-delivery'], d.headers['webhook-id']);
    assert.match(d.headers['x-switchyard-signature'], /^t=[0-9]+,v1=[0-9a-f]{64}$/);
    ids.add(d.headers['webhook-id']);
  }
  assert.equal(ids.size, deliveries.length, 'one webhook-id per delivery');
  const states = deliveries.map((d) => JSON.parse(d.body).state);
  assert.ok(states.includes('in_progress') && states.includes('completed'), states.join());
});

test('webhooks.unwrap refuses a tampered body, another id and another secret', async () => {
  const id = await submitHookedJob('tamper with me');
  await waitTerminal(id);
  const [d] = (await deliveriesOf(id, 'completed')).filter(
    (x) => JSON.parse(x.body).state === 'completed');
  await client.webhooks.unwrap(d.body, d.headers);  // the untouched delivery passes

  const tampered = d.body.replace('"completed"', '"failed"');
  assert.notEqual(tampered, d.body);
  await assert.rejects(client.webhooks.unwrap(tampered, d.headers),
    (e) => e instanceof OpenAI.InvalidWebhookSignatureError);
  await assert.rejects(
    client.webhooks.unwrap(d.body, { ...d.headers, 'webhook-id': `${d.headers['webhook-id']}0` }),
    (e) => e instanceof OpenAI.InvalidWebhookSignatureError);
  const other = `whsec_${Buffer.from('another key, not the engine one').toString('base64')}`;
  await assert.rejects(client.webhooks.unwrap(d.body, d.headers, other),
    (e) => e instanceof OpenAI.InvalidWebhookSignatureError);
  // A delivery an hour old is refused by the SDK's 5-minute tolerance.
  const { 'webhook-timestamp': ts, ...rest } = d.headers;
  await assert.rejects(
    client.webhooks.unwrap(d.body, { ...rest, 'webhook-timestamp': String(Number(ts) - 3600) }),
    (e) => e instanceof OpenAI.InvalidWebhookSignatureError);
});

test('a batch POSTs only its terminal transition, as an OpenAI event that webhooks.unwrap accepts', async () => {
  const api = new OpenAI({ baseURL: `${BASE_URL}/v1`, apiKey: API_KEY || 'unused', maxRetries: 0,
    webhookSecret: WEBHOOK_SECRET });
  const line = (i) => JSON.stringify({
    custom_id: `hooked-${i}`, method: 'POST', url: '/v1/chat/completions',
    body: { model: MODEL, messages: [{ role: 'user', content: `batch hook ${i}` }] },
  });
  const file = await api.files.create({
    file: await toFile(Buffer.from(`${line(0)}\n${line(1)}\n`), 'hooked.jsonl'), purpose: 'batch' });
  // webhook_url and max_inflight are extension fields: the SDK passes them through as given.
  const batch = await api.batches.create({
    input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h',
    webhook_url: hookUrl, max_inflight: 1 });
  assert.equal(batch.webhook_url, hookUrl);
  assert.equal(batch.max_inflight, 1);
  const isMine = (d) => { const b = JSON.parse(d.body); return b.data && b.data.id === batch.id; };
  const [d] = await waitFor(() => {
    const mine = received.filter(isMine);
    return mine.length > 0 ? mine : null;
  }, 60_000, `a webhook for ${batch.id}`);
  const event = await api.webhooks.unwrap(d.body, d.headers);
  assert.equal(event.type, 'batch.completed');
  assert.equal(event.object, 'event');
  assert.equal(event.data.id, batch.id);
  assert.equal(event.id, d.headers['webhook-id']);
  assert.equal(typeof event.created_at, 'number');
  assert.equal((await api.batches.retrieve(batch.id)).status, 'completed');
  // Only the terminal transition is POSTed: nothing for validating or in_progress, however long
  // the deliverer is given (a later delivery would arrive within its first retry).
  const jobId = await submitHookedJob('a later job, delivered after the batch\'s');
  await waitTerminal(jobId);
  await deliveriesOf(jobId, 'completed');
  assert.equal(received.filter(isMine).length, 1);
});
