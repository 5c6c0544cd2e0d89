// The Files and Batch API as the official `openai` package calls it: files.create, batches.create
// / retrieve / cancel / list, files.content / retrieve / list / del. No hand-made HTTP here.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';

import { API_KEY, BASE_URL, MODEL, waitFor } from './env.mjs';

const client = new OpenAI({ baseURL: `${BASE_URL}/v1`, apiKey: API_KEY || 'unused', maxRetries: 0 });
const TERMINAL = new Set(['completed', 'failed', 'expired', 'cancelled']);

function jsonl(n, prefix, fake = {}) {
  const lines = [];
  for (let i = 0; i < n; i++) {
    lines.push(JSON.stringify({
      custom_id: `${prefix}-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: {
        model: MODEL,
        messages: [
          { role: 'system', content: `prompt ${i % 3}` },
          { role: 'user', content: `hello ${i}` },
        ],
        fake: { key: `${prefix}-${i}`, ...fake },
      },
    }));
  }
  return lines.join('\n') + '\n';
}

async function upload(text, name = 'input.jsonl') {
  return client.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'batch' });
}

function waitBatch(id, deadlineMs = 60_000) {
  return waitFor(async () => {
    const b = await client.batches.retrieve(id);
    return TERMINAL.has(b.status) ? b : null;
  }, deadlineMs, `batch ${id} to finish`);
}

async function lines(fileId) {
  if (!fileId) return [];
  const res = await client.files.content(fileId);
  const text = await res.text();
  return text.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
}

test('a batch runs to completion and its output file has one line per request', async () => {
  const file = await upload(jsonl(30, 'ok'));
  assert.equal(file.object, 'file');
  assert.equal(file.purpose, 'batch');
  assert.equal(file.filename, 'input.jsonl');
  assert.match(file.id, /^file-/);
  assert.equal((await client.files.retrieve(file.id)).bytes, file.bytes);

  const batch = await client.batches.create({
    input_file_id: file.id,
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
    metadata: { run: 'openai-node' },
  });
  assert.equal(batch.object, 'batch');
  assert.match(batch.id, /^batch_/);
  assert.equal(batch.status, 'validating');
  assert.deepEqual(batch.metadata, { run: 'openai-node' });

  const done = await waitBatch(batch.id);
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.request_counts, { total: 30, completed: 30, failed: 0 });
  assert.equal(done.error_file_id, null);
  assert.ok(done.completed_at >= done.created_at);
  assert.ok(done.usage.input_tokens > 0);

  const out = await lines(done.output_file_id);
  assert.equal(out.length, 30);
  const ids = new Set(out.map((l) => l.custom_id));
  assert.equal(ids.size, 30);
  for (const l of out) {
    assert.match(l.id, /^batch_req_/);
    assert.equal(l.response.status_code, 200);
    assert.equal(l.response.body.object, 'chat.completion');
    assert.equal(l.error, null);
  }
  const outFile = await client.files.retrieve(done.output_file_id);
  assert.equal(outFile.purpose, 'batch_output');
});

test('cancel keeps finished lines and accounts for every request', async () => {
  const file = await upload(jsonl(60, 'cx', { latency_ms: 200 }));
  const batch = await client.batches.create({
    input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h',
  });
  await waitFor(async () => (await client.batches.retrieve(batch.id)).request_counts.completed >= 5,
    30_000, 'some lines to finish');
  const cancelling = await client.batches.cancel(batch.id);
  assert.ok(['cancelling', 'cancelled'].includes(cancelling.status), cancelling.status);
  const done = await waitBatch(batch.id);
  assert.equal(done.status, 'cancelled');
  assert.ok(done.cancelled_at > 0);
  const out = await lines(done.output_file_id);
  const err = await lines(done.error_file_id);
  assert.equal(out.length, done.request_counts.completed);
  assert.equal(err.length, done.request_counts.failed);
  assert.equal(out.length + err.length, 60);
  assert.equal(new Set([...out, ...err].map((l) => l.custom_id)).size, 60);
  assert.ok(err.length > 0);
  for (const l of err) assert.equal(l.error.code, 'batch_cancelled');
});

test('an invalid input file fails the batch with line errors', async () => {
  const bad = jsonl(2, 'dup').split('\n')[0];
  const file = await upload(`${bad}\n${bad}\nnot json\n`);
  const batch = await client.batches.create({
    input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h',
  });
  const done = await waitBatch(batch.id);
  assert.equal(done.status, 'failed');
  assert.equal(done.errors.object, 'list');
  assert.deepEqual(done.errors.data.map((e) => [e.code, e.line]),
    [['duplicate_custom_id', 2], ['invalid_json_line', 3]]);
  assert.equal(done.output_file_id, null);
});

test('bad requests answer OpenAI errors the SDK understands', async () => {
  await assert.rejects(
    client.batches.create({ input_file_id: 'file-nope', endpoint: '/v1/chat/completions', completion_window: '24h' }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'file_not_found');
  const file = await upload(jsonl(1, 'e'));
  await assert.rejects(
    client.batches.create({ input_file_id: file.id, endpoint: '/v1/moderations', completion_window: '24h' }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'invalid_value' && e.param === 'endpoint');
  await assert.rejects(
    client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '1h' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'completion_window');
  await assert.rejects(client.batches.retrieve('batch_nope'),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'batch_not_found');
  await assert.rejects(
    client.files.create({ file: await toFile(Buffer.from('{}\n'), 'input.txt'), purpose: 'batch' }),
    (e) => e instanceof OpenAI.BadRequestError);
});

test('batches and files list with cursors, and files can be deleted', async () => {
  const a = await upload(jsonl(1, 'la'));
  const b1 = await client.batches.create({ input_file_id: a.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  const b2 = await client.batches.create({ input_file_id: a.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  const page = await client.batches.list({ limit: 1 });
  assert.equal(page.data.length, 1);
  assert.equal(page.data[0].id, b2.id);
  assert.equal(page.hasNextPage(), true);
  const seen = [];
  for await (const b of client.batches.list({ limit: 1 })) {
    seen.push(b.id);
    if (seen.length === 2) break;
  }
  assert.deepEqual(seen, [b2.id, b1.id]);
  await waitBatch(b1.id);
  await waitBatch(b2.id);

  const files = await client.files.list({ purpose: 'batch' });
  assert.ok(files.data.some((f) => f.id === a.id));
  const deleted = await client.files.delete(a.id);
  assert.deepEqual(deleted, { id: a.id, object: 'file', deleted: true });
  await assert.rejects(client.files.retrieve(a.id), (e) => e instanceof OpenAI.NotFoundError);
});
