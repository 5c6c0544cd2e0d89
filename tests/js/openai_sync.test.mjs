// The synchronous OpenAI-compatible endpoints as the official `openai` package calls them: the
// request goes through Switchyard's queue to the gateway, and the answer is exactly the
// gateway's status and body, plus header X-Switchyard-Job-Id (docs/api.md).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

import { API_KEY, BASE_URL, MODEL, getJob } from './env.mjs';

// No client-side retries: a retry would hide what the endpoint answered the first time.
const client = new OpenAI({ baseURL: `${BASE_URL}/v1`, apiKey: API_KEY || 'unused', maxRetries: 0 });

test('chat.completions.create returns the gateway completion', async () => {
  const { data, response } = await client.chat.completions
    .create({ model: MODEL, messages: [{ role: 'user', content: 'hi from openai-node' }] })
    .withResponse();
  assert.equal(response.status, 200);
  assert.equal(data.object, 'chat.completion');
  assert.equal(data.model, MODEL);
  assert.equal(data.choices[0].message.role, 'assistant');
  assert.equal(data.choices[0].message.content, 'echo: hi from openai-node');

  const jobId = response.headers.get('x-switchyard-job-id');
  assert.match(jobId ?? '', /^job_/);
  const job = await getJob(jobId);
  assert.equal(job.status, 'completed');
});

test('embeddings.create returns the gateway embeddings', async () => {
  const { data, response } = await client.embeddings
    // 'float' explicitly: without it openai-node asks for base64 and decodes it, and the fake
    // gateway only speaks floats.
    .create({ model: MODEL, input: ['one', 'two'], encoding_format: 'float' })
    .withResponse();
  assert.equal(data.object, 'list');
  assert.equal(data.data.length, 2);
  assert.equal(data.data[0].object, 'embedding');
  assert.ok(Array.isArray(data.data[0].embedding) && data.data[0].embedding.length > 0);
  assert.match(response.headers.get('x-switchyard-job-id') ?? '', /^job_/);
});

test('a gateway 400 surfaces as openai.BadRequestError with the gateway status', async () => {
  await assert.rejects(
    client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'fail please' }],
      // Extra body fields reach the gateway untouched; the fake gateway answers this status.
      fake: { status: 400 },
    }),
    (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError, `got ${err?.constructor?.name}: ${err}`);
      assert.equal(err.status, 400);
      assert.equal(err.error?.type, 'invalid_request_error');
      // openai-node 5+ gives the response's headers as a Headers object.
      assert.match(err.headers?.get('x-switchyard-job-id') ?? '', /^job_/);
      return true;
    },
  );
});
