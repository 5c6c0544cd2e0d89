#!/usr/bin/env python3
"""An example Switchyard worker: Python 3, standard library only.

It leases tasks of one runtime from the engine's internal listener, runs a demo piece of work,
heartbeats while it works and reports the result. Read it as documentation of the worker
protocol (examples/workers/README.md); replace `do_work` with your own work.

Demo work, on the task's `input` object:
  {"text": "hi"}       -> output {"text": "HI", "length": 2}   (length in Unicode code points)
  {"fail": "why"}      -> fail with code "demo_failure", not retryable
  {"sleep_ms": 5000}   -> sleep that long first, heartbeating meanwhile

Usage:
  SWITCHYARD_WORKER_KEY=... python3 worker.py --runtime demo --concurrency 4

Logs are one JSON object per line on stderr. SIGTERM or SIGINT: finish the tasks in hand, lease
no more, exit 0; a second signal exits at once (the engine re-runs those tasks after their lease
expires).
"""

import argparse
import http.client
import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone

CAPABILITY_HEADER = "X-Switchyard-Task-Capability"
# Extra seconds the HTTP client waits beyond a lease's long-poll before giving up on the engine.
HTTP_TIMEOUT_S = 10.0
# With --wait-ms 0 an empty lease answer comes back at once; pause before asking again.
EMPTY_POLL_PAUSE_S = 1.0


# --- logging: one JSON object per line on stderr ------------------------------------------------

_log_lock = threading.Lock()


def log(level, msg, **fields):
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    record = {"ts": now, "level": level, "msg": msg, **fields}
    line = json.dumps(record, separators=(",", ":"), default=str)
    with _log_lock:  # threads must not interleave their lines
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


# --- HTTP -------------------------------------------------------------------------------------


def error_code(body):
    """The `code` of an OpenAI-style error envelope, or None."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("code")
    return None


def is_transient(status):
    """Worth retrying: no answer at all (status 0), a server error, or 429."""
    return status == 0 or status == 429 or status >= 500


def is_lost(status):
    """The engine says this attempt is no longer ours: 409 (`stale_attempt`, `lease_expired`) or
    401 (`invalid_capability_token`). Stop working on it and never retry the call."""
    return status in (401, 409)


class Engine:
    """The internal listener's task API. Every call returns (HTTP status, parsed JSON body);
    status 0 means no answer (connection refused or reset, timeout)."""

    def __init__(self, base_url, worker_key):
        self.base_url = base_url.rstrip("/")
        self.worker_key = worker_key

    def lease(self, runtime, max_tasks, wait_ms):
        headers = {}
        if self.worker_key:
            headers["Authorization"] = "Bearer " + self.worker_key
        body = {"runtime": runtime, "max_tasks": max_tasks, "wait_ms": wait_ms}
        return self._post("/v1/task/lease", body, headers, wait_ms / 1000 + HTTP_TIMEOUT_S)

    def task_call(self, path, token, body):
        """heartbeat, complete or fail: authorised by the attempt's capability token alone."""
        return self._post(path, body, {CAPABILITY_HEADER: token}, HTTP_TIMEOUT_S)

    def _post(self, path, body, headers, timeout_s):
        data = json.dumps(body).encode("utf-8")
        request = urllib.request.Request(
            self.base_url + path, data=data, method="POST",
            headers={"Content-Type": "application/json", **headers})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return response.status, _parse(response.read())
        except urllib.error.HTTPError as e:  # an answer, just not 2xx
            return e.code, _parse(e.read())
        except (OSError, http.client.HTTPException) as e:  # no answer
            return 0, {"error": {"message": str(e), "code": "connection_error"}}


def _parse(raw):
    try:
        return json.loads(raw)
    except ValueError:
        return None


# --- the demo work ------------------------------------------------------------------------------


class WorkError(Exception):
    """The work failed; reported with `/v1/task/fail`."""

    def __init__(self, code, message, retryable):
        super().__init__(message)
        self.code, self.message, self.retryable = code, message, retryable


def do_work(task_input, interrupted):
    """Runs the demo work and returns its output (any JSON value), raises WorkError, or returns
    None when `interrupted` (an Event) was set meanwhile: cancelled, or the attempt was lost."""
    if not isinstance(task_input, dict):
        raise WorkError("bad_input", "input must be a JSON object", retryable=False)

    sleep_ms = task_input.get("sleep_ms", 0)
    if isinstance(sleep_ms, bool) or not isinstance(sleep_ms, (int, float)) or sleep_ms < 0:
        raise WorkError("bad_input", "sleep_ms must be a non-negative number", retryable=False)
    # Long work must check for interruption now and then; here, wait on the event instead of sleep.
    if interrupted.wait(sleep_ms / 1000):
        return None

    if "fail" in task_input:
        raise WorkError("demo_failure", str(task_input["fail"]), retryable=False)

    text = task_input.get("text", "")
    if not isinstance(text, str):
        raise WorkError("bad_input", "text must be a string", retryable=False)
    return {"text": text.upper(), "length": len(text)}


# --- one attempt: heartbeat while working, then report -----------------------------------------


class Attempt:
    """One leased attempt of a task. Its worker thread and its heartbeat thread share it; the lock
    guards the token and deadline, which every heartbeat replaces."""

    def __init__(self, task):
        self.task_id = task["task_id"]
        self.job_id = task.get("job_id")
        self.attempt = task.get("attempt")
        self.input = task.get("input")
        self.lease_ttl_ms = task["lease_ttl_ms"]
        self._lock = threading.Lock()
        self._token = task["capability_token"]
        self._deadline = 0.0
        self._renewed()
        self.cancelled = threading.Event()  # the engine asked us to stop (cancel_requested)
        self.lost = threading.Event()       # 409/401: the attempt is no longer ours
        self.interrupted = threading.Event()  # either of the two: the work should stop

    def _renewed(self):
        # The local monotonic clock, not lease_expires_at: the engine's clock and ours may differ.
        self._deadline = time.monotonic() + self.lease_ttl_ms / 1000

    def renew(self, token):
        with self._lock:
            self._token = token  # the old token may be refused from now on
            self._renewed()

    @property
    def token(self):
        with self._lock:
            return self._token

    @property
    def seconds_left(self):
        with self._lock:
            return self._deadline - time.monotonic()

    def fields(self):
        """Log fields naming this attempt."""
        return {"task_id": self.task_id, "job_id": self.job_id, "attempt": self.attempt}


def heartbeat_loop(engine, att, done):
    """Heartbeats every lease_ttl_ms/3 until `done` is set or the attempt is lost. A failed
    heartbeat is retried at the next tick: two more tries remain before the lease expires."""
    interval_s = att.lease_ttl_ms / 3 / 1000
    while not done.wait(interval_s):
        status, body = engine.task_call("/v1/task/heartbeat", att.token, {})
        if status == 200:
            att.renew(body["capability_token"])
            if body.get("cancel_requested") and not att.cancelled.is_set():
                log("info", "cancel requested", **att.fields())
                att.cancelled.set()
                att.interrupted.set()
        elif is_lost(status):
            log("warn", "attempt lost, dropping its work", status=status,
                code=error_code(body), **att.fields())
            att.lost.set()
            att.interrupted.set()
            return
        else:
            log("warn", "heartbeat failed, will retry", status=status,
                code=error_code(body), **att.fields())


def report(engine, att, path, body):
    """Sends complete or fail. Retries transient errors with backoff until the lease would have
    expired. Returns (status, reply) of the last answer."""
    backoff_s = 0.2
    while True:
        status, reply = engine.task_call(path, att.token, body)
        if status == 200 or is_lost(status) or not is_transient(status):
            return status, reply
        left_s = att.seconds_left
        if left_s <= 0:
            log("error", "giving up: the lease has expired", call=path, status=status,
                **att.fields())
            return status, reply
        log("warn", "report failed, retrying", call=path, status=status,
            code=error_code(reply), retry_in_s=round(min(backoff_s, left_s), 3), **att.fields())
        time.sleep(min(backoff_s, left_s))
        backoff_s = min(backoff_s * 2, 5.0)


def send_fail(engine, att, code, message, retryable):
    body = {"error": {"code": code, "message": message}, "retryable": retryable}
    status, reply = report(engine, att, "/v1/task/fail", body)
    if status == 200:
        log("info", "task failed", code=code, retryable=retryable, **att.fields())
    elif is_lost(status):
        log("warn", "attempt lost before fail", status=status, code=error_code(reply),
            **att.fields())
    else:
        log("error", "fail not accepted", status=status, reply=reply, **att.fields())


def send_complete(engine, att, output, max_body_bytes):
    body = {"output": output}
    size = len(json.dumps(body).encode("utf-8"))
    if size > max_body_bytes:  # the engine would answer 413; say why instead
        send_fail(engine, att, "output_too_large",
                  f"output is {size} bytes, the engine accepts {max_body_bytes}", False)
        return
    status, reply = report(engine, att, "/v1/task/complete", body)
    if status == 200:
        log("info", "task completed", output_bytes=size, **att.fields())
    elif is_lost(status):
        log("warn", "attempt lost before complete", status=status, code=error_code(reply),
            **att.fields())
    elif not is_transient(status):  # refused (e.g. 400, 413): tell the engine, do not retry
        message = (reply or {}).get("error", {}).get("message", f"HTTP {status}")
        send_fail(engine, att, "output_rejected", f"complete refused: {message}", False)


def run_attempt(engine, att, max_body_bytes):
    log("info", "task leased", lease_ttl_ms=att.lease_ttl_ms, **att.fields())
    done = threading.Event()
    heartbeat = threading.Thread(target=heartbeat_loop, args=(engine, att, done), daemon=True)
    heartbeat.start()
    output, failure = None, None
    try:
        output = do_work(att.input, att.interrupted)
    except WorkError as e:
        failure = e
    except Exception as e:  # a bug in the work: let another attempt try
        log("error", "work raised", error=repr(e), **att.fields())
        failure = WorkError("worker_error", repr(e), retryable=True)
    finally:
        # Stop heartbeating before reporting, so no heartbeat replaces the token mid-report.
        done.set()
        heartbeat.join()

    if att.lost.is_set():
        return  # already logged; another attempt may be running it now
    if att.cancelled.is_set():
        send_fail(engine, att, "cancelled", "cancel requested", retryable=False)
    elif failure is not None:
        send_fail(engine, att, failure.code, failure.message, failure.retryable)
    else:
        send_complete(engine, att, output, max_body_bytes)


# --- leasing loop -------------------------------------------------------------------------------


class Budget:
    """How many more tasks this process may lease (--max-tasks); None means no limit."""

    def __init__(self, limit):
        self._left = limit
        self._lock = threading.Lock()

    def take(self):
        with self._lock:
            if self._left is None:
                return True
            if self._left == 0:
                return False
            self._left -= 1
            return True

    def give_back(self):
        with self._lock:
            if self._left is not None:
                self._left += 1


def lease_loop(engine, args, budget, stopping, fatal):
    """One worker thread: lease one task, run it to the end, repeat until told to stop."""
    backoff_s = 0.5
    while not stopping.is_set() and budget.take():
        status, body = engine.lease(args.runtime, 1, args.wait_ms)
        if status != 200:
            budget.give_back()
            if not is_transient(status):  # bad key, unknown runtime...: retrying will not help
                log("error", "lease refused", status=status, reply=body)
                fatal.set()
                stopping.set()
                return
            log("warn", "lease failed, retrying", status=status, code=error_code(body),
                retry_in_s=backoff_s)
            stopping.wait(backoff_s)
            backoff_s = min(backoff_s * 2, 10.0)
            continue
        backoff_s = 0.5
        tasks = body.get("tasks", [])
        if not tasks:
            budget.give_back()
            if args.wait_ms == 0:
                stopping.wait(EMPTY_POLL_PAUSE_S)
            continue
        # A task leased is ours even if a signal arrived meanwhile: run it to the end.
        for task in tasks:
            run_attempt(engine, Attempt(task), args.max_body_bytes)


def parse_args():
    env = os.environ.get
    p = argparse.ArgumentParser(description="Example Switchyard worker (demo runtime).")
    p.add_argument("--url", default=env("SWITCHYARD_INTERNAL_URL", "http://127.0.0.1:8081"),
                   help="the engine's internal listener (env SWITCHYARD_INTERNAL_URL)")
    p.add_argument("--runtime", default=env("SWITCHYARD_RUNTIME", "demo"),
                   help="runtime to lease tasks of (env SWITCHYARD_RUNTIME)")
    p.add_argument("--concurrency", type=int, default=4, help="tasks run at once (threads)")
    p.add_argument("--max-tasks", type=int, default=None,
                   help="exit 0 after finishing this many tasks (for tests)")
    p.add_argument("--wait-ms", type=int, default=10000,
                   help="lease long-poll, 0..30000; also bounds how long shutdown waits")
    p.add_argument("--max-body-bytes", type=int,
                   default=int(env("SWITCHYARD_MAX_BODY_BYTES", "1048576")),
                   help="the engine's max_body_bytes: larger outputs fail as output_too_large")
    args = p.parse_args()
    if args.concurrency < 1:
        p.error("--concurrency must be at least 1")
    if args.max_tasks is not None and args.max_tasks < 1:
        p.error("--max-tasks must be at least 1")
    if not 0 <= args.wait_ms <= 30000:
        p.error("--wait-ms must be in 0..30000")
    return args


def main():
    args = parse_args()
    # The key comes from the environment only, so it does not show up in `ps`.
    engine = Engine(args.url, os.environ.get("SWITCHYARD_WORKER_KEY") or None)
    budget = Budget(args.max_tasks)
    stopping, fatal = threading.Event(), threading.Event()

    def on_signal(signum, _frame):
        if stopping.is_set():
            log("warn", "second signal, exiting now", signal=signum)
            os._exit(128 + signum)
        log("info", "shutting down: finishing current tasks", signal=signum)
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    log("info", "worker started", url=args.url, runtime=args.runtime,
        concurrency=args.concurrency, max_tasks=args.max_tasks)
    threads = [threading.Thread(target=lease_loop, args=(engine, args, budget, stopping, fatal),
                                name=f"worker-{i}", daemon=True)
               for i in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.5)  # short joins keep the main thread free to run the signal handler
    log("info", "worker stopped")
    return 2 if fatal.is_set() else 0


if __name__ == "__main__":
    sys.exit(main())
