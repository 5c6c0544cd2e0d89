// Switchyard dashboard: a small single-page app over the engine's public HTTP API (docs/api.md).
// No framework and no build step. Hash routes (#/, #/jobs, #/jobs/<id>, #/batches,
// #/batches/<id>) render into <main>; a view polls or streams only while it is shown, and
// everything it started stops when the route changes (its AbortController).

const POLL_MS = 2000; // lists, batches and the overview re-read every 2 s while the tab is visible
const HISTORY_MS = 5 * 60_000; // the overview keeps 5 minutes of scrapes for its rates
const JOB_STATUSES = ['ingesting', 'queued', 'in_progress', 'cancelling', 'completed', 'failed',
  'cancelled', 'expired'];
const TASK_STATUSES = ['queued', 'in_progress', 'completed', 'failed', 'cancelled'];
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'expired']);
const BATCH_LIVE = new Set(['validating', 'in_progress', 'finalizing', 'cancelling']);

// ---- Session: the keys live in sessionStorage, so they go when the tab closes ----

const store = window.sessionStorage;
const session = {
  get signedIn() { return store.getItem('sy.signedIn') === '1'; },
  get apiKey() { return store.getItem('sy.apiKey') ?? ''; },
  get metricsKey() { return store.getItem('sy.metricsKey') ?? ''; },
  save(apiKey, metricsKey) {
    store.setItem('sy.apiKey', apiKey);
    store.setItem('sy.metricsKey', metricsKey);
    store.setItem('sy.signedIn', '1');
  },
  clear() { for (const k of ['sy.apiKey', 'sy.metricsKey', 'sy.signedIn']) store.removeItem(k); },
};

// ---- DOM helpers ----

/// h('a', {href, class, 'data-testid', onclick}, ...children): an element; null children skip.
function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  setProps(el, props);
  el.append(...children.flat(Infinity).filter((c) => c != null && c !== false)
    .map((c) => (c instanceof Node ? c : String(c))));
  return el;
}

/// The same for SVG elements (the sparklines).
function svg(tag, props = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  setProps(el, props);
  el.append(...children);
  return el;
}

function setProps(el, props) {
  for (const [k, v] of Object.entries(props)) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

/// Unix seconds (or ms with ms=true) as local "YYYY-MM-DD HH:MM:SS"; '—' for null.
function fmtTime(t, ms = false) {
  if (t == null) return '—';
  const d = new Date(ms ? t : t * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function fmtDuration(sec) {
  if (sec == null || !Number.isFinite(sec)) return '—';
  if (sec < 60) return `${sec < 10 ? sec.toFixed(1) : Math.round(sec)} s`;
  if (sec < 3600) return `${Math.floor(sec / 60)} min ${Math.round(sec % 60)} s`;
  return `${(sec / 3600).toFixed(1)} h`;
}

function fmtRate(v) {
  if (v == null || !Number.isFinite(v)) return '—';
  return v >= 100 ? Math.round(v).toString() : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

const fmtInt = (n) => (n == null ? '—' : Math.round(n).toLocaleString('en-US'));
const metaText = (m) => Object.entries(m ?? {}).map(([k, v]) => `${k}=${v}`).join(', ');
const badge = (status, testid) =>
  h('span', { class: `badge s-${status}`, 'data-testid': testid, 'data-status': status }, status);
const fact = (k, v) => h('div', {}, h('dt', {}, k), h('dd', {}, v ?? '—'));
const emptyRow = (cols, text) => h('tr', {}, h('td', { class: 'empty', colspan: cols }, text));

/// A table with a header row; a head given as [text, class] gets that class (e.g. 'num').
function table(attrs, heads, tbody) {
  const th = (x) => (Array.isArray(x) ? h('th', { class: x[1] }, x[0]) : h('th', {}, x));
  return h('table', attrs, h('thead', {}, h('tr', {}, heads.map(th))), tbody);
}

/// Runs fn on each click of btn, with btn disabled meanwhile; errors go to the banner.
function onAction(ctx, btn, fn) {
  btn.addEventListener('click', () => ctx.guard(async () => {
    btn.disabled = true;
    try { await fn(); } finally { btn.disabled = false; }
  }));
}

/// A stacked bar: segments [{cls, n}] over total; `attrs` become data-* attributes (test hooks).
function bar(segments, total, attrs = {}, big = false) {
  const el = h('div', { class: big ? 'bar big' : 'bar' });
  updateBar(el, segments, total, attrs);
  return el;
}

function updateBar(el, segments, total, attrs = {}) {
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  el.replaceChildren(...segments.map(({ cls, n }) => {
    const seg = h('span', { class: `seg-${cls}`, title: `${cls}: ${n}` });
    // Set through the CSSOM, which the CSP allows (a style="" attribute it would refuse).
    seg.style.width = `${total > 0 ? Math.min(100, (100 * n) / total) : 0}%`;
    return seg;
  }));
}

// ---- The error banner: every API error is shown there (message, code, status, route) ----

const banner = document.getElementById('banner');

function showError(err) {
  if (err?.name === 'AbortError') return;
  const code = err.code ? `${err.status ? `${err.status} ` : ''}${err.code}` : 'Error';
  banner.replaceChildren(
    h('span', { class: 'code', 'data-testid': 'error-code' }, code),
    h('span', { 'data-testid': 'error-message' }, err.message),
    err.path ? h('span', { class: 'where' }, `${err.method ?? 'GET'} ${err.path}`) : null,
    h('button', { type: 'button', onclick: clearError }, 'Dismiss'));
  banner.hidden = false;
}

function clearError() { banner.hidden = true; banner.replaceChildren(); }

// ---- API client: same origin, Bearer key, OpenAI error envelope ----

class ApiError extends Error {
  constructor(status, body, method, path) {
    const e = body?.error ?? {};
    super(e.message ?? `HTTP ${status}`);
    Object.assign(this, { status, code: e.code ?? null, type: e.type, param: e.param });
    Object.assign(this, { method, path });
  }
}

/// fetch() with the key (none when empty: an engine without api_keys); throws ApiError on a
/// non-2xx answer or when the engine cannot be reached.
async function request(path, { method = 'GET', body, key = session.apiKey, signal,
  headers } = {}) {
  const hs = { ...(key ? { Authorization: `Bearer ${key}` } : {}), ...headers };
  if (body !== undefined) hs['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers: hs, signal, cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, { error: { message: `Cannot reach the engine: ${err.message}`,
      code: 'network_error' } }, method, path);
  }
  if (!res.ok) {
    let parsed = null;
    try { parsed = await res.json(); } catch { /* not the JSON envelope */ }
    throw new ApiError(res.status, parsed, method, path);
  }
  return res;
}

const getJSON = async (path, opts) => (await request(path, opts)).json();
const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

/// Downloads a file's content with the key (a plain link could not carry it) via a blob URL.
async function download(fileId, signal) {
  const res = await request(`/v1/files/${encodeURIComponent(fileId)}/content`, { signal });
  const blob = await res.blob();
  const disposition = res.headers.get('Content-Disposition') ?? '';
  const name = /filename="?([^";]+)"?/.exec(disposition)?.[1] ?? `${fileId}.jsonl`;
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
}

// ---- Views and their lifetime ----

/// What a view owns: an abort signal for its fetches and streams, and polling that stops with it.
function newContext() {
  const controller = new AbortController();
  const ctx = {
    signal: controller.signal,
    get live() { return !controller.signal.aborted; },
    stop: () => controller.abort(),
    /// Runs fn; an error goes to the banner unless the view is gone.
    async guard(fn) {
      try {
        return await fn();
      } catch (err) {
        if (ctx.live) showError(err);
        return undefined;
      }
    },
    /// Runs fn now and every `ms` after the previous run ended, skipping while the tab is hidden;
    /// returns a function that runs it again at once (coalesced with a run in flight).
    poll(fn, ms = POLL_MS) {
      let timer = null; let running = false; let again = false;
      const tick = async () => {
        clearTimeout(timer);
        timer = null;
        if (!ctx.live) return;
        if (running) { again = true; return; }
        running = true;
        if (document.visibilityState === 'visible') await ctx.guard(fn);
        running = false;
        if (!ctx.live) return;
        if (again) { again = false; tick(); return; }
        timer = setTimeout(tick, ms);
      };
      const onVisible = () => { if (document.visibilityState === 'visible') tick(); };
      document.addEventListener('visibilitychange', onVisible);
      controller.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        document.removeEventListener('visibilitychange', onVisible);
      });
      tick();
      return tick;
    },
  };
  return ctx;
}

/// Cursor paging over a list route ({data, last_id, has_more}): Next follows last_id, Previous
/// returns to the cursor the previous page started from (the API has no backwards cursor).
function pager(onChange, testid) {
  const cursors = [null];
  let lastId = null;
  const prev = h('button', { type: 'button', 'data-testid': `${testid}-prev`, disabled: true,
    onclick: () => { cursors.pop(); onChange(); } }, '‹ Previous');
  const next = h('button', { type: 'button', 'data-testid': `${testid}-next`, disabled: true,
    onclick: () => { cursors.push(lastId); onChange(); } }, 'Next ›');
  const label = h('span', { class: 'sub' });
  return {
    el: h('div', { class: 'pager' }, label, prev, next),
    get after() { return cursors.at(-1); },
    reset() { cursors.length = 1; },
    update(list) {
      lastId = list.last_id;
      prev.disabled = cursors.length === 1;
      next.disabled = !list.has_more;
      label.textContent = `page ${cursors.length}`;
    },
  };
}

const view = document.getElementById('view');
let current = null;

/// Renders the view the hash names, after stopping the previous one.
function route() {
  current?.stop();
  current = newContext();
  clearError();
  const signedIn = session.signedIn;
  document.getElementById('nav').hidden = !signedIn;
  document.getElementById('signout').hidden = !signedIn;
  document.getElementById('who').textContent = !signedIn ? '' :
    `${session.apiKey ? `key …${session.apiKey.slice(-4)}` : 'no API key'}` +
    `${session.metricsKey ? ` · metrics key …${session.metricsKey.slice(-4)}` : ''}`;
  if (!signedIn) { renderSignIn(current); return; }

  const [path, query = ''] = location.hash.replace(/^#\/?/, '').split('?');
  const [section = '', id] = path.split('/').map(decodeURIComponent);
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.route === section);
  }
  const params = new URLSearchParams(query);
  if (section === '') renderOverview(current);
  else if (section === 'jobs' && id) renderJob(current, id);
  else if (section === 'jobs') renderJobs(current, params);
  else if (section === 'batches' && id) renderBatch(current, id);
  else if (section === 'batches') renderBatches(current);
  else view.replaceChildren(h('p', {}, 'No such page. ', h('a', { href: '#/' }, 'Overview')));
}

// ---- Sign-in ----

function renderSignIn(ctx) {
  const apiKey = h('input', { type: 'password', id: 'api-key', autocomplete: 'off',
    'data-testid': 'signin-api-key', placeholder: 'sk-…' });
  const metricsKey = h('input', { type: 'password', id: 'metrics-key', autocomplete: 'off',
    'data-testid': 'signin-metrics-key', placeholder: 'optional' });
  const submit = h('button', { type: 'submit', class: 'primary', 'data-testid': 'signin-submit' },
    'Sign in');
  const form = h('form', { class: 'card signin', 'data-testid': 'signin-form' },
    h('h1', {}, 'Sign in'),
    h('label', { for: 'api-key' }, 'API key'),
    apiKey,
    h('p', {}, 'A client key: it reads and acts on this tenant\'s jobs and batches. Leave it ' +
      'empty when the engine has no api_keys (the loopback default).'),
    h('label', { for: 'metrics-key' }, 'Metrics key'),
    metricsKey,
    h('p', {}, 'A key with the metrics or admin role, for the overview (/metrics). Empty: the ' +
      'API key is tried.'),
    h('p', {}, 'Keys stay in this tab\'s session storage and are sent only to this engine.'),
    submit);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    submit.disabled = true;
    try {
      // Proves the API key before keeping it: a wrong key is shown here, not on every page.
      await request('/v1/jobs?limit=1', { key: apiKey.value.trim(), signal: ctx.signal });
      session.save(apiKey.value.trim(), metricsKey.value.trim());
      route();
    } catch (err) {
      if (ctx.live) showError(err);
    } finally {
      submit.disabled = false;
    }
  });
  view.replaceChildren(form);
  apiKey.focus();
}

// ---- Overview: /metrics scraped every 2 s; rates from counter deltas between scrapes ----

/// Parses the Prometheus text format into [{name, labels, value}]; '#' lines are skipped.
function parseMetrics(text) {
  const out = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    const v = m[3];
    const value = v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v);
    out.push({ name: m[1], labels, value });
  }
  return out;
}

/// One scrape: sums of series by name, optionally filtered or grouped by a label.
class Scrape {
  constructor(t, samples) { this.t = t; this.samples = samples; }
  has(name) { return this.samples.some((s) => s.name === name); }
  sum(name, where = () => true) {
    let total = 0;
    for (const s of this.samples) if (s.name === name && where(s.labels)) total += s.value;
    return total;
  }
  by(name, label) {
    const m = new Map();
    for (const s of this.samples) {
      if (s.name === name) m.set(s.labels[label], (m.get(s.labels[label]) ?? 0) + s.value);
    }
    return m;
  }
}

const history = []; // the last 5 minutes of scrapes; kept across visits to the overview

/// A counter's increase between two scrapes (a drop means the engine restarted: count from 0).
function increase(a, b, name, where) {
  const va = a.sum(name, where);
  const vb = b.sum(name, where);
  return vb >= va ? vb - va : vb;
}

function rate(a, b, name, where) {
  const dt = (b.t - a.t) / 1000;
  return a && b && dt > 0 ? increase(a, b, name, where) / dt : null;
}

/// The oldest scrape of the last `ms` before the newest one (for rates "now", over ~10 s).
function scrapeSince(ms) {
  const last = history.at(-1);
  return history.find((s) => s !== last && s.t >= last.t - ms) ?? history.at(-2);
}

/// A sparkline of per-scrape values (x: the time kept, up to 5 minutes; y: 0..max).
function sparkline(points, cls = '') {
  const W = 300; const H = 40;
  const el = svg('svg', { class: `spark ${cls}`, viewBox: `0 0 ${W} ${H}`,
    preserveAspectRatio: 'none', 'aria-hidden': 'true' });
  el.append(svg('line', { x1: 0, y1: H - 1, x2: W, y2: H - 1 }));
  if (points.length < 2) return el;
  const end = points.at(-1).t;
  const span = Math.max(end - points[0].t, 10_000);
  const max = Math.max(...points.map((p) => p.v), 1e-9);
  const xy = points.map((p) => `${(W * (1 - (end - p.t) / span)).toFixed(1)},` +
    `${(H - 2 - ((H - 4) * p.v) / max).toFixed(1)}`);
  el.append(svg('polyline', { points: xy.join(' ') }));
  return el;
}

/// Per-interval rates of a counter across the history, for a sparkline.
function rateSeries(name, where) {
  const pts = [];
  for (let i = 1; i < history.length; i++) {
    pts.push({ t: history[i].t, v: rate(history[i - 1], history[i], name, where) });
  }
  return pts;
}

const notReEnqueued = (l) => l.result !== 're_enqueued';
const THROUGHPUT = [
  { label: 'Attempts / s', name: 'switchyard_attempts_total',
    note: 'switchyard_attempts_total (single jobs and tasks)' },
  { label: 'Jobs ended / s', name: 'jobs_processed_total', where: notReEnqueued,
    note: 'jobs_processed_total, without re_enqueued' },
  { label: 'Gateway requests / s', name: 'model_request_execution_duration_seconds_count',
    note: 'every gateway request, batch lines included' },
];

function renderOverview(ctx) {
  const notice = h('div', { class: 'notice', 'data-testid': 'metrics-notice', hidden: true });
  const stamp = h('span', { class: 'sub', 'data-testid': 'scraped-at' });
  const rateCards = h('div', { class: 'cards' });
  const stateCards = h('div', { class: 'cards' });
  const queues = h('tbody', {}, emptyRow(6, 'Loading…'));
  view.replaceChildren(
    h('div', { class: 'head' }, h('h1', {}, 'Overview'),
      h('div', { class: 'right' }, stamp)),
    notice, rateCards, stateCards,
    h('h2', {}, 'Queues'),
    table({ 'data-testid': 'queues' }, ['Queue (model or runtime)', ['Depth', 'num'],
      ['Oldest queued', 'num'], 'In flight / limit', ['Requests / s', 'num'],
      ['Errors, 5 min', 'num']], queues));

  const stopPolling = () => ctx.stop();
  ctx.poll(async () => {
    const key = session.metricsKey || session.apiKey;
    let text;
    try {
      text = await (await request('/metrics', { key, signal: ctx.signal })).text();
    } catch (err) {
      if (err.status !== 401) throw err;
      // A client key cannot read /metrics: say which key is needed instead of failing.
      notice.hidden = false;
      notice.textContent = `/metrics answered ${err.status} ${err.code}: ${err.message} The ` +
        'overview needs a key with the metrics or admin role' +
        (session.metricsKey ? '; the metrics key given was refused.' :
          '; no metrics key was given and the API key cannot read it.') +
        ' Sign out and sign in with one as the metrics key. Jobs and batches work without it.';
      stopPolling();
      return;
    }
    const now = new Scrape(Date.now(), parseMetrics(text));
    history.push(now);
    while (history.length && history[0].t < now.t - HISTORY_MS) history.shift();
    stamp.textContent = `scraped every ${POLL_MS / 1000} s · last ${fmtTime(now.t, true)} · ` +
      `${history.length} scrapes kept (5 min)`;
    drawRates(rateCards, now);
    drawState(stateCards, now);
    drawQueues(queues, now);
  });
}

function card(label, big, ...rest) {
  return h('div', { class: 'card' }, h('div', { class: 'label' }, label),
    h('div', { class: 'big' }, big), ...rest);
}

function rows(pairs) {
  return h('div', { class: 'rows' }, pairs.map(([k, v]) => [h('span', {}, k), h('span', {}, v)]));
}

/// Throughput and error rate, computed here from the counters' deltas.
function drawRates(el, now) {
  const recent = scrapeSince(10_000);
  const first = history[0];
  const minutes = ((now.t - first.t) / 60_000).toFixed(1);
  const cards = THROUGHPUT.map((s) => card(s.label,
    recent ? fmtRate(rate(recent, now, s.name, s.where)) : '—',
    sparkline(rateSeries(s.name, s.where)),
    h('div', { class: 'sub' }, `${fmtRate(rate(first, now, s.name, s.where))} avg over ` +
      `${minutes} min · ${s.note}`)));

  const reqs = increase(first, now, 'model_request_execution_duration_seconds_count');
  const errs = increase(first, now, 'request_errors_by_model_total');
  const ended = (r) => fmtInt(increase(first, now, 'jobs_processed_total', (l) => l.result === r));
  const errPoints = history.slice(1).map((b, i) => {
    const n = increase(history[i], b, 'model_request_execution_duration_seconds_count');
    const e = increase(history[i], b, 'request_errors_by_model_total');
    return { t: b.t, v: n > 0 ? e / n : 0 };
  });
  cards.push(card(`Gateway error rate, ${minutes} min`,
    reqs > 0 ? `${((100 * errs) / reqs).toFixed(1)} %` : '—',
    sparkline(errPoints, 'errors'),
    rows([['jobs completed', ended('success')], ['failed', ended('failed')],
      ['cancelled', ended('cancelled')], ['expired', ended('expired')]])));
  el.replaceChildren(...cards);
}

/// Gauges and totals: in flight, webhooks, NATS and the outbox.
function drawState(el, now) {
  const hooks = (o) =>
    fmtInt(now.sum('switchyard_webhook_deliveries_total', (l) => l.outcome === o));
  const connected = now.sum('switchyard_nats_connected') === 1;
  el.replaceChildren(
    card('Gateway requests in flight', `${fmtInt(now.sum('processor_inflight_requests'))} / ` +
      `${fmtInt(now.sum('processor_max_inflight_concurrency'))}`,
    rows([['jobs and batches running', fmtInt(now.sum('active_workers'))],
      ['queued tasks, all queues', fmtInt(now.sum('switchyard_queue_depth'))]])),
    card('Webhooks delivered', hooks('delivered'),
      rows([['retried', hooks('retried')], ['dropped', hooks('dropped')]])),
    card('NATS', h('span', { class: connected ? 'good' : 'bad', 'data-testid': 'nats-state' },
      connected ? 'connected' : 'disconnected'),
    rows([['reconnects', fmtInt(now.sum('switchyard_nats_reconnects_total'))]])),
    card('Outbox records', fmtInt(now.sum('switchyard_outbox_records')),
      rows([
        ['unable to empty for', fmtDuration(now.sum('switchyard_outbox_oldest_age_seconds'))],
        ['published to JetStream', fmtInt(now.sum('switchyard_outbox_published_total'))]])));
}

/// One row per queue: depth and oldest age (queue gauges), in flight against the model's limit.
function drawQueues(tbody, now) {
  const depth = now.by('switchyard_queue_depth', 'queue');
  const oldest = now.by('switchyard_queue_oldest_age_seconds', 'queue');
  const inflight = now.by('model_inflight_requests', 'model');
  const limit = now.by('switchyard_model_concurrency_limit', 'model');
  const names = [...new Set([...depth.keys(), ...inflight.keys(), ...limit.keys()])].sort();
  const recent = scrapeSince(10_000);
  const first = history[0];
  if (!names.length) {
    tbody.replaceChildren(emptyRow(6, 'No queue yet: a queue appears with its first job.'));
    return;
  }
  tbody.replaceChildren(...names.map((q) => {
    const busy = inflight.get(q); const max = limit.get(q);
    const ofModel = (l) => l.model === q;
    const requests = 'model_request_execution_duration_seconds_count';
    return h('tr', { 'data-testid': 'queue-row', 'data-queue': q },
      h('td', { class: 'mono' }, q),
      h('td', { class: 'num', 'data-testid': 'queue-depth' }, fmtInt(depth.get(q) ?? 0)),
      h('td', { class: 'num' }, depth.get(q) ? fmtDuration(oldest.get(q)) : '—'),
      h('td', {}, busy == null ? h('span', { class: 'sub' }, 'worker runtime') :
        h('div', { class: 'progress' },
          bar([{ cls: busy >= max ? 'full' : 'used', n: busy }], max,
            { 'data-testid': 'queue-inflight', 'data-inflight': busy, 'data-limit': max ?? '' }),
          h('span', { class: 'count' }, `${fmtInt(busy)} / ${fmtInt(max)}`))),
      h('td', { class: 'num' }, recent ? fmtRate(rate(recent, now, requests, ofModel)) : '—'),
      h('td', { class: 'num' },
        fmtInt(increase(first, now, 'request_errors_by_model_total', ofModel))));
  }));
}

// ---- Jobs list ----

/// "done / total" of a task list, with the failed count when there is one.
function taskSummary(c) {
  const done = c.completed + c.failed + c.cancelled;
  return `${fmtInt(done)} / ${c.total == null ? '?' : fmtInt(c.total)} tasks` +
    (c.failed ? ` · ${fmtInt(c.failed)} failed` : '');
}

function renderJobs(ctx, params) {
  const status = params.get('status') ?? '';
  let filter = ''; // text filter on the rows of the current page
  let page = null;
  const select = h('select', { 'data-testid': 'jobs-status-filter', 'aria-label': 'Status' },
    h('option', { value: '' }, 'All statuses'),
    JOB_STATUSES.map((s) => h('option', { value: s, selected: s === status }, s)));
  select.addEventListener('change', () => {
    location.hash = select.value ? `#/jobs?status=${select.value}` : '#/jobs';
  });
  const search = h('input', { type: 'search', id: 'search', 'data-testid': 'jobs-search',
    placeholder: 'job_… opens the job; other text filters this page' });
  const form = h('form', {}, search, h('button', { type: 'submit' }, 'Go'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = search.value.trim();
    if (/^job_\w+$/.test(q)) { location.hash = `#/jobs/${q}`; return; }
    filter = q.toLowerCase();
    if (page) draw(page);
  });
  search.addEventListener('input', () => {
    if (!search.value) { filter = ''; if (page) draw(page); }
  });
  const tbody = h('tbody', {}, emptyRow(6, 'Loading…'));
  const pages = pager(() => refresh(), 'jobs');
  view.replaceChildren(
    h('div', { class: 'head' }, h('h1', {}, 'Jobs'),
      h('span', { class: 'sub' }, `newest first · refreshed every ${POLL_MS / 1000} s`)),
    h('div', { class: 'toolbar' }, select, form, h('span', { class: 'sub' },
      'The list API has no search by custom_id or metadata: text matches this page only.')),
    table({ 'data-testid': 'jobs-table', 'data-filter': status },
      ['Job', 'Metadata', 'Status', 'Model / endpoint', 'Created', 'Tasks'], tbody),
    pages.el);

  function draw(list) {
    const matches = (j) => !filter || j.id.toLowerCase().includes(filter) ||
      metaText(j.metadata).toLowerCase().includes(filter);
    const shown = list.data.filter(matches);
    tbody.replaceChildren(...shown.map((j) => h('tr',
      { 'data-testid': 'job-row', 'data-job-id': j.id },
      h('td', {}, h('a', { class: 'mono', href: `#/jobs/${j.id}` }, j.id)),
      h('td', { class: 'sub' }, metaText(j.metadata)),
      h('td', {}, badge(j.status, 'job-row-status')),
      h('td', {}, j.model ?? (j.runtime ? `runtime ${j.runtime}` : '(several models)'),
        h('div', { class: 'sub' }, j.endpoint)),
      h('td', {}, fmtTime(j.created_at)),
      h('td', {}, j.task_counts ? taskSummary(j.task_counts) : ''))));
    if (!shown.length) {
      tbody.append(emptyRow(6, list.data.length ? 'No job on this page matches.' : 'No jobs.'));
    }
  }

  const refresh = ctx.poll(async () => {
    const q = new URLSearchParams({ limit: '25' });
    if (status) q.set('status', status);
    if (pages.after) q.set('after', pages.after);
    page = await getJSON(`/v1/jobs?${q}`, { signal: ctx.signal });
    pages.update(page);
    draw(page);
  });
}

// ---- Job detail: the events stream (fetch + SSE parsing), the job, its tasks ----

/// Splits a text/event-stream body into events {id, event, data} (comments are skipped).
async function* sseEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value.replace(/\r\n/g, '\n');
      let end;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const ev = { id: null, event: 'message', data: [] };
        for (const line of frame.split('\n')) {
          if (!line || line.startsWith(':')) continue; // ": keep-alive"
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') ev.id = val;
          else if (field === 'event') ev.event = val;
          else if (field === 'data') ev.data.push(val);
        }
        if (ev.data.length) yield { ...ev, data: ev.data.join('\n') };
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/// Follows GET /v1/jobs/{id}/events until the terminal event, reconnecting with Last-Event-ID
/// (the API resumes without repeats) when the connection drops; a 4xx stops it (banner).
/// The API ends a stream after the job's last terminal event (a rerun task list's replay goes
/// on through every run). Resolves with the last event id seen.
async function followEvents(ctx, id, lastId, onEvent, onState) {
  let delay = 1000;
  let terminal = false;
  while (ctx.live) {
    try {
      if (!terminal) onState(lastId ? 'resuming…' : 'connecting…', '');
      const res = await request(`/v1/jobs/${encodeURIComponent(id)}/events`,
        { signal: ctx.signal, headers: lastId ? { 'Last-Event-ID': lastId } : {} });
      if (!terminal) onState('● live', 'live');
      delay = 1000;
      for await (const ev of sseEvents(res.body)) {
        if (ev.id) lastId = ev.id;
        const data = JSON.parse(ev.data);
        onEvent(data);
        terminal = TERMINAL.has(data.state);
        if (terminal) onState('stream ended: the job is finished', '');
        else onState('● live', 'live');
      }
      if (terminal) return lastId;
      onState(`connection closed; reconnecting in ${delay / 1000} s`, 'retrying');
    } catch (err) {
      if (!ctx.live) return lastId;
      if (err.status >= 400 && err.status < 500) {
        showError(err);
        onState('stream stopped', '');
        return lastId;
      }
      onState(`stream dropped (${err.message}); reconnecting in ${delay / 1000} s`, 'retrying');
    }
    await sleep(delay, ctx.signal);
    delay = Math.min(delay * 2, 15_000);
  }
  return lastId;
}

function jsonBlock(label, value, open = false) {
  return h('details', { open },
    h('summary', {}, label), h('pre', { class: 'json' }, JSON.stringify(value, null, 2)));
}

function renderJob(ctx, id) {
  const path = `/v1/jobs/${encodeURIComponent(id)}`;
  let job = null; let dirty = true; let lastEventId = null; let streaming = false;
  const seen = new Set();

  const statusEl = h('span', {});
  const stream = h('span', { class: 'stream', 'data-testid': 'stream-state' });
  const cancelBtn = h('button', { type: 'button', class: 'danger', 'data-testid': 'job-cancel',
    hidden: true }, 'Cancel');
  const rerunBtn = h('button', { type: 'button', 'data-testid': 'job-rerun', hidden: true },
    'Rerun failed tasks');
  const facts = h('dl', { class: 'facts' });
  const errorBox = h('div', { class: 'errorbox', 'data-testid': 'job-error', hidden: true });
  const tasksSection = h('section', { hidden: true });
  const timeline = h('ol', { class: 'timeline', 'data-testid': 'events' });
  const resultBox = h('section', {});
  view.replaceChildren(
    h('div', { class: 'head' }, h('h1', { class: 'mono' }, id), statusEl, stream,
      h('div', { class: 'right' }, cancelBtn, rerunBtn, h('a', { href: '#/jobs' }, '← Jobs'))),
    facts, errorBox, tasksSection,
    h('h2', {}, 'Events'), timeline, resultBox);

  // Task lists: counts as a bar, and the tasks one page at a time (with a status filter).
  const taskBar = bar([], 0, { 'data-testid': 'task-progress' }, true);
  const taskCount = h('span', { class: 'count' });
  const taskBody = h('tbody', {});
  const taskFilter = h('select', { 'aria-label': 'Task status' }, h('option', { value: '' },
    'All tasks'), TASK_STATUSES.map((s) => h('option', { value: s }, s)));
  // A task id or custom_id finds one task (GET /v1/jobs/{id}/tasks/{task_id} takes either).
  const taskSearch = h('input', { type: 'search', placeholder: 'task id or custom_id',
    'aria-label': 'Find a task', 'data-testid': 'tasks-search' });
  const taskPages = pager(() => ctx.guard(loadTasks), 'tasks');
  taskFilter.addEventListener('change', () => { taskPages.reset(); ctx.guard(loadTasks); });
  taskSearch.addEventListener('change', () => { taskPages.reset(); ctx.guard(loadTasks); });
  tasksSection.append(h('h2', {}, 'Tasks'),
    h('div', { class: 'progress' }, taskBar, taskCount), h('div', { class: 'legend' }),
    h('div', { class: 'toolbar' }, taskFilter, taskSearch),
    table({}, [['#', 'num'], 'custom_id', 'Status', 'Model', ['Attempts', 'num'], 'Finished',
      'Result / error'], taskBody),
    taskPages.el);

  const taskRow = (t) => h('tr', { 'data-testid': 'task-row' },
    h('td', { class: 'num' }, t.index), h('td', { class: 'mono' }, t.custom_id ?? ''),
    h('td', {}, badge(t.status)), h('td', {}, t.model ?? t.runtime ?? ''),
    h('td', { class: 'num' }, `${t.attempts} / ${t.max_attempts}`),
    h('td', {}, fmtTime(t.finished_at)),
    h('td', {}, t.error ? h('span', { class: 'bad' }, `${t.error.code}: ${t.error.message}`)
      : null, t.result ? jsonBlock(`status ${t.result.status_code}`, t.result) : null));

  async function loadTasks() {
    const wanted = taskSearch.value.trim();
    if (wanted) {
      const t = await getJSON(`${path}/tasks/${encodeURIComponent(wanted)}`,
        { signal: ctx.signal });
      taskPages.update({ last_id: null, has_more: false });
      taskBody.replaceChildren(taskRow(t));
      return;
    }
    const q = new URLSearchParams({ limit: '20' });
    if (taskFilter.value) q.set('status', taskFilter.value);
    if (taskPages.after) q.set('after', taskPages.after);
    const list = await getJSON(`${path}/tasks?${q}`, { signal: ctx.signal });
    taskPages.update(list);
    taskBody.replaceChildren(...list.data.map(taskRow));
    if (!list.data.length) taskBody.append(emptyRow(7, 'No tasks.'));
  }

  function showJob() {
    statusEl.replaceChildren(badge(job.status, 'job-status'));
    cancelBtn.hidden = TERMINAL.has(job.status);
    rerunBtn.hidden = !(job.task_counts && TERMINAL.has(job.status));
    facts.replaceChildren(...[
      fact('Endpoint', job.endpoint),
      fact(job.runtime ? 'Runtime' : 'Model', job.runtime ?? job.model ?? '(several models)'),
      job.task_counts ? fact('Attempts per task', `at most ${job.max_attempts}`) :
        fact('Attempts', `${job.attempts} of at most ${job.max_attempts}`),
      fact('Metadata', metaText(job.metadata) || '—'),
      fact('Created', fmtTime(job.created_at)),
      fact('Started', fmtTime(job.started_at)),
      fact('Finished', fmtTime(job.finished_at)),
      fact('Deadline', fmtTime(job.expires_at)),
      job.webhook_url ? fact('Webhook', job.webhook_url) : null,
      job.task_counts ? fact('Run / max in flight', `${job.run} / ${job.max_inflight}`) : null,
    ].filter(Boolean));
    errorBox.hidden = !job.error;
    errorBox.replaceChildren(...(job.error ? [h('strong', {}, job.error.code), ': ',
      job.error.message] : []));
    if (job.errors?.data?.length) {
      errorBox.hidden = false;
      errorBox.append(h('ul', {}, job.errors.data.map((e) => h('li', {},
        `line ${e.line ?? '—'}: ${e.code}${e.param ? ` (${e.param})` : ''}: ${e.message}`))));
    }
    const c = job.task_counts;
    tasksSection.hidden = !c;
    if (c) {
      const known = c.queued + c.in_progress + c.completed + c.failed + c.cancelled;
      const total = c.total ?? known;
      updateBar(taskBar, ['completed', 'failed', 'cancelled', 'in_progress']
        .map((cls) => ({ cls, n: c[cls] })), total,
      { 'data-completed': c.completed, 'data-failed': c.failed, 'data-total': c.total ?? '' });
      taskCount.textContent = `${fmtInt(c.completed + c.failed + c.cancelled)} / ` +
        `${c.total == null ? `${fmtInt(known)} so far (list still open)` : fmtInt(c.total)} done`;
      tasksSection.querySelector('.legend').replaceChildren(...TASK_STATUSES
        .map((s) => h('span', {}, `${s} ${fmtInt(c[s])}`)));
    }
    const open = resultBox.querySelector('details')?.open ?? true;
    resultBox.replaceChildren(...(job.result ? [h('h2', {}, 'Result'),
      jsonBlock(`status ${job.result.status_code}`, job.result, open)] : []));
  }

  function addEvent(ev) {
    if (seen.has(ev.sequence)) return;
    seen.add(ev.sequence);
    const time = `${fmtTime(ev.timestamp_ms, true).slice(11)}.${pad(ev.timestamp_ms % 1000, 3)}`;
    timeline.append(h('li', { 'data-testid': 'event', 'data-state': ev.state },
      h('span', { class: 'sub' }, `#${ev.sequence}`), h('span', { class: 'mono' }, time),
      h('span', {}, badge(ev.state)),
      h('span', {}, ev.attempt ? `attempt ${ev.attempt} ` : '',
        ev.previous_state ? h('span', { class: 'sub' }, `from ${ev.previous_state} `) : null,
        ev.error ? h('span', { class: 'err' }, `${ev.error.code}: ${ev.error.message}`) : null,
        ev.result_url ? h('span', { class: 'sub' }, ' (large result: read from the job)') : null)));
  }

  // The job is re-read when an event arrives; a running task list also every 2 s, since its
  // counts move with every task and a task's change is no event of the job's.
  const refresh = ctx.poll(async () => {
    const listRunning = job?.task_counts && !TERMINAL.has(job.status);
    if (!dirty && !listRunning) return;
    dirty = false;
    job = await getJSON(path, { signal: ctx.signal });
    showJob();
    if (job.task_counts) await loadTasks();
  });

  async function follow() {
    if (streaming) return;
    streaming = true;
    lastEventId = await followEvents(ctx, id, lastEventId, (ev) => {
      addEvent(ev);
      dirty = true;
      refresh();
    }, (text, cls) => { stream.textContent = text; stream.className = `stream ${cls}`; });
    streaming = false;
  }
  follow();

  const act = (what) => async () => {
    job = await getJSON(`${path}/${what}`, { method: 'POST', signal: ctx.signal });
    showJob();
    if (!TERMINAL.has(job.status)) follow(); // after a rerun: its events come on a new stream
  };
  onAction(ctx, cancelBtn, act('cancel'));
  onAction(ctx, rerunBtn, act('rerun'));
}

// ---- Batches ----

/// A batch's progress: (completed + failed) over total, with the counts as test hooks.
function batchProgress(rc, big = false) {
  const segments = [{ cls: 'completed', n: rc.completed }, { cls: 'failed', n: rc.failed }];
  const el = bar(segments, rc.total, { 'data-testid': 'batch-progress',
    'data-completed': rc.completed, 'data-failed': rc.failed, 'data-total': rc.total }, big);
  return h('div', { class: 'progress' }, el,
    h('span', { class: 'count', 'data-testid': 'batch-count' },
      `${fmtInt(rc.completed + rc.failed)} / ${fmtInt(rc.total)}` +
      (rc.failed ? ` · ${fmtInt(rc.failed)} failed` : '')));
}

function renderBatches(ctx) {
  const tbody = h('tbody', {}, emptyRow(6, 'Loading…'));
  const pages = pager(() => refresh(), 'batches');
  view.replaceChildren(
    h('div', { class: 'head' }, h('h1', {}, 'Batches'),
      h('span', { class: 'sub' }, `newest first · refreshed every ${POLL_MS / 1000} s`)),
    table({ 'data-testid': 'batches-table' },
      ['Batch', 'Status', 'Progress', 'Endpoint', 'Created', 'Metadata'], tbody),
    pages.el);
  const refresh = ctx.poll(async () => {
    const q = new URLSearchParams({ limit: '25' });
    if (pages.after) q.set('after', pages.after);
    const list = await getJSON(`/v1/batches?${q}`, { signal: ctx.signal });
    pages.update(list);
    tbody.replaceChildren(...list.data.map((b) => h('tr',
      { 'data-testid': 'batch-row', 'data-batch-id': b.id },
      h('td', {}, h('a', { class: 'mono', href: `#/batches/${b.id}` }, b.id)),
      h('td', {}, badge(b.status)),
      h('td', {}, batchProgress(b.request_counts)),
      h('td', {}, b.endpoint), h('td', {}, fmtTime(b.created_at)),
      h('td', { class: 'sub' }, metaText(b.metadata)))));
    if (!list.data.length) tbody.append(emptyRow(6, 'No batches.'));
  });
}

function renderBatch(ctx, id) {
  const path = `/v1/batches/${encodeURIComponent(id)}`;
  let batch = null;
  const statusEl = h('span', {});
  const cancelBtn = h('button', { type: 'button', class: 'danger', 'data-testid': 'batch-cancel',
    hidden: true }, 'Cancel batch');
  const progress = h('div', {});
  const facts = h('dl', { class: 'facts' });
  const files = h('tbody', {});
  const errors = h('section', {});
  view.replaceChildren(
    h('div', { class: 'head' }, h('h1', { class: 'mono' }, id), statusEl,
      h('div', { class: 'right' }, cancelBtn, h('a', { href: '#/batches' }, '← Batches'))),
    h('h2', {}, 'Progress'), progress,
    h('h2', {}, 'Details'), facts,
    h('h2', {}, 'Files'),
    table({}, ['File', 'Id', ''], files),
    errors);

  function show() {
    const b = batch;
    statusEl.replaceChildren(badge(b.status, 'batch-status'));
    cancelBtn.hidden = !['validating', 'in_progress', 'finalizing'].includes(b.status);
    progress.replaceChildren(batchProgress(b.request_counts, true));
    const u = b.usage;
    facts.replaceChildren(
      fact('Endpoint', b.endpoint), fact('Completion window', b.completion_window),
      fact('Created', fmtTime(b.created_at)), fact('Window ends', fmtTime(b.expires_at)),
      fact('In progress', fmtTime(b.in_progress_at)), fact('Finalizing', fmtTime(b.finalizing_at)),
      ...['completed', 'failed', 'expired', 'cancelling', 'cancelled']
        .filter((s) => b[`${s}_at`] != null).map((s) => fact(s[0].toUpperCase() + s.slice(1),
          fmtTime(b[`${s}_at`]))),
      fact('Tokens in / out', u ? `${fmtInt(u.input_tokens)} / ${fmtInt(u.output_tokens)}` : '—'),
      fact('Metadata', metaText(b.metadata) || '—'));
    // Links to /v1/files/{id}/content would not carry the key: the button fetches with it.
    const kinds = [['Input', b.input_file_id, 'input'], ['Output', b.output_file_id, 'output'],
      ['Errors', b.error_file_id, 'error']];
    files.replaceChildren(...kinds.map(([label, fid, kind]) => h('tr', {}, h('td', {}, label),
      h('td', { class: 'mono' }, fid ?? (BATCH_LIVE.has(b.status) ? 'not yet' : 'none')),
      h('td', {}, fid ? h('button', { type: 'button', 'data-testid': `download-${kind}`,
        onclick: () => ctx.guard(() => download(fid, ctx.signal)) }, 'Download') : null))));
    const list = b.errors?.data ?? [];
    errors.replaceChildren(...(list.length ? [h('h2', {}, `Errors (${list.length})`),
      table({ 'data-testid': 'batch-errors' }, [['Line', 'num'], 'Code', 'Param', 'Message'],
        h('tbody', {}, list.map((e) => h('tr', {}, h('td', { class: 'num' }, e.line ?? '—'),
        h('td', { class: 'mono' }, e.code), h('td', { class: 'mono' }, e.param ?? ''),
        h('td', {}, e.message)))))] : []));
  }

  // Re-read every 2 s while the batch can still change.
  ctx.poll(async () => {
    if (batch && !BATCH_LIVE.has(batch.status)) return;
    batch = await getJSON(path, { signal: ctx.signal });
    show();
  });
  onAction(ctx, cancelBtn, async () => {
    batch = await getJSON(`${path}/cancel`, { method: 'POST', signal: ctx.signal });
    show();
  });
}

// ---- Start ----

document.getElementById('signout').addEventListener('click', () => {
  session.clear();
  route();
});
window.addEventListener('hashchange', route);
route();
