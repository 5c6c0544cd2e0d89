// The NATS intake as a Node.js publisher uses it, with the official `nats` package: JetStream
// publish on <prefix>.submit.job with Nats-Msg-Id, Authorization and Sy-Reply-To; the engine
// answers on the Sy-Reply-To subject (docs/nats.md).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect, createInbox, headers, JSONCodec, StringCodec } from 'nats';

import { API_KEY, MODEL, NATS_URL, SUBJECT_PREFIX, waitFor, waitTerminal } from './env.mjs';

const SUBJECT = `${SUBJECT_PREFIX}.submit.job`;
const sc = StringCodec();
const jc = JSONCodec();
let nc;
let js;

before(async () => {
  nc = await connect({ servers: NATS_URL, name: 'intake.test.mjs' });
  js = nc.jetstream();
});

after(async () => {
  await nc?.drain();
});

function chat(content, extra = {}) {
  return {
    endpoint: '/v1/chat/completions',
    body: { model: MODEL, messages: [{ role: 'user', content }], ...extra },
  };
}

/// Publishes `payload` (an object, or raw text) and waits for the engine's reply on a fresh
/// inbox. Returns { ack, status, body }; `reply: false` when JetStream dropped it as a duplicate.
async function publish(payload, { msgID, apiKey = API_KEY, timeout = 15_000 } = {}) {
  const inbox = createInbox();
  const sub = nc.subscribe(inbox, { max: 1, timeout });
  await nc.flush(); // the inbox exists on the server before the engine can answer
  const h = headers();
  if (apiKey) h.set('Authorization', `Bearer ${apiKey}`);
  h.set('Sy-Reply-To', inbox);
  const data = typeof payload === 'string' ? sc.encode(payload) : jc.encode(payload);
  const ack = await js.publish(SUBJECT, data, { msgID, headers: h });
  if (ack.duplicate) {
    sub.unsubscribe();
    return { ack, reply: false };
  }
  for await (const m of sub) {
    return { ack, reply: true, status: m.headers?.get('Sy-Status'), body: jc.decode(m.data) };
  }
  throw new Error('the reply subscription ended without a reply');
}

/// Like publish(), but repeats a copy that JetStream dropped inside SY_INTAKE's 100 ms
/// duplicate window until one reaches the engine.
function publishUntilDelivered(payload, options) {
  return waitFor(async () => {
    const r = await publish(payload, options);
    return r.reply ? r : null;
  }, 10_000, 'a copy outside the duplicate window');
}

test('a submission creates a job that completes, and the reply carries the job', async () => {
  const r = await publish(chat('hello from node'), { msgID: randomUUID() });
  assert.equal(r.ack.duplicate, false);
  assert.equal(r.status, '202');
  assert.equal(r.body.object, 'job');
  assert.match(r.body.id, /^job_/);
  assert.equal(r.body.model, MODEL);

  const job = await waitTerminal(r.body.id);
  assert.equal(job.status, 'completed', JSON.stringify(job));
  assert.equal(job.result.body.object, 'chat.completion');
  assert.equal(job.result.body.choices[0].message.content, 'echo: hello from node');
});

test('the same Nats-Msg-Id twice gives the same job', async () => {
  const msgID = randomUUID();
  const first = await publish(chat('only once'), { msgID });
  assert.equal(first.body.object, 'job', JSON.stringify(first.body));
  const second = await publishUntilDelivered(chat('only once'), { msgID });
  assert.equal(second.body.id, first.body.id);
  assert.ok(['200', '202'].includes(second.status), second.status);
});

test('a bad submission is answered with the OpenAI error envelope', async () => {
  const bad = await publish('{"endpoint": ', { msgID: randomUUID() });
  assert.equal(bad.status, '400');
  assert.equal(bad.body.error.code, 'invalid_json');
  assert.equal(bad.body.error.type, 'invalid_request_error');

  const noModel = await publish(
    { endpoint: '/v1/chat/completions', body: { messages: [] } },
    { msgID: randomUUID() },
  );
  assert.equal(noModel.status, '400');
  assert.equal(noModel.body.error.code, 'missing_model');
  assert.equal(noModel.body.error.param, 'body.model');
});

test('a wrong API key is refused', { skip: !API_KEY && 'no API key configured' }, async () => {
  const r = await publish(chat('who am I'), { msgID: randomUUID(), apiKey: 'sk-wrong' });
  assert.equal(r.status, '401');
  assert.equal(r.body.error.code, 'invalid_api_key');
  assert.equal(r.body.error.type, 'authentication_error');
});
