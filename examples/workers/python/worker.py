#!/usr/bin/env python3
"""An example Switchyard worker: Python 3, standard library only.

It leases tasks of one runtime from the engine's internal listener, runs a demo piece of work,
heartbeats while it works and reports the result. Read it as documentation of the worker
protocol (examples/workers/README.md); replace `do_work` with your own work.

Demo work, on the task's `input` object:
  {"text": "hi"}       -> output {"text": "HI", "length": 2}   (length in Unicode code points)
  {"fail": "why"}      -> fail with code "demo_failure", not retryable
  {"sleep_ms": 5000}   -> sleep that long first, heartbeating meanwhile
  {"text": "hi", "write_to": "s3://bucket/some/key.txt"}
                       -> also store "HI" (UTF-8) in that S3 object, then output
                          {"text": "HI", "length": 2, "written": "s3://bucket/some/key.txt",
                           "credentials_expire": "<ISO 8601>"}

The write_to demo shows storage credentials: the job must have been submitted with a grant
covering the object (e.g. "grants": {"write": ["s3://bucket/some/"]}). The worker asks the engine
for short-lived S3 credentials limited to the job's grants (POST /v1/task/credentials with the
attempt's current token), then PUTs the object itself, signed with AWS Signature Version 4
(`sigv4_authorization`, no SDK). The secret key and session token never appear in the output or
the logs. Failures: a write_to that is not s3://bucket/key -> "bad_input"; the engine cannot mint
credentials -> "credentials_unavailable" (retryable); the task has no grants -> "invalid_grants";
S3 refuses the PUT -> "storage_write_failed" (retryable on 5xx or no answer, not on 403).

Usage:
  SWITCHYARD_WORKER_KEY=... python3 worker.py --runtime demo --concurrency 4

Logs are one JSON object per line on stderr. SIGTERM or SIGINT: finish the tasks in hand, lease
no more, exit 0; a second signal exits at once (the engine re-runs those tasks after their lease
expires).
"""

import argparse
import hashlib
import hmac
import http.client
import json
import os
import re
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone

CAPABILITY_HEADER = "X-Switchyard-Task-Capability"
# Extra seconds the HTTP client waits beyond a lease's long-poll before giving up on the engine.
HTTP_TIMEOUT_S = 10.0
# With --wait-ms 0 an empty lease answer comes back at once; pause before asking again.
EMPTY_POLL_PAUSE_S = 1.0
# How long an S3 request (the write_to demo) may take.
S3_TIMEOUT_S = 30.0


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
        """heartbeat, credentials, complete or fail: authorised by the attempt's capability token
        alone."""
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


# --- S3: AWS Signature Version 4 and PUT Object --------------------------------------------------


def sigv4_authorization(method, canonical_uri, canonical_query, headers, payload_sha256,
                        access_key_id, secret_access_key, region, service, amz_date):
    """The `Authorization` header value of an AWS Signature Version 4 request.

    `headers` are the headers to sign, name -> value; they must include Host and x-amz-date (and
    x-amz-content-sha256 for S3), and the request must send exactly these values. `canonical_uri`
    is the path as sent, already URI-encoded (`s3_object_path`); `canonical_query` the sorted,
    encoded query string ("" for none); `payload_sha256` the hex SHA-256 of the body; `amz_date`
    the x-amz-date value, YYYYMMDD'T'HHMMSS'Z' in UTC."""
    # 1. The canonical request: method, path, query, the signed headers (lower-case names, sorted,
    #    values trimmed with inner runs of spaces collapsed, one "name:value\n" each), a blank line
    #    ending them, the list of signed header names, and the payload's hash.
    signed = sorted((name.lower(), " ".join(str(value).split()))
                    for name, value in headers.items())
    signed_names = ";".join(name for name, _ in signed)
    canonical_request = "\n".join([
        method,
        canonical_uri,
        canonical_query,
        "".join(f"{name}:{value}\n" for name, value in signed),
        signed_names,
        payload_sha256,
    ])
    # 2. The string to sign: the algorithm, the time, the credential scope (the day, region and
    #    service the signature is valid for) and the hash of the canonical request.
    day = amz_date[:8]
    scope = f"{day}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join([
        "AWS4-HMAC-SHA256",
        amz_date,
        scope,
        hashlib.sha256(canonical_request.encode("utf-8")).hexdigest(),
    ])

    # 3. The signing key: an HMAC-SHA256 chain from the secret over the scope's parts.
    def hmac_sha256(key, text):
        return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()

    key = hmac_sha256(("AWS4" + secret_access_key).encode("utf-8"), day)
    key = hmac_sha256(key, region)
    key = hmac_sha256(key, service)
    key = hmac_sha256(key, "aws4_request")
    # 4. The signature: HMAC of the string to sign with that key, in hex.
    signature = hmac.new(key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    return (f"AWS4-HMAC-SHA256 Credential={access_key_id}/{scope}, "
            f"SignedHeaders={signed_names}, Signature={signature}")


def parse_s3_url(url):
    """(bucket, key) of "s3://bucket/key", both non-empty; None for anything else."""
    if not isinstance(url, str) or not url.startswith("s3://"):
        return None
    bucket, _, key = url[len("s3://"):].partition("/")
    if not bucket or not key:
        return None
    return bucket, key


def s3_object_path(base_path, bucket, key):
    """The path-style path of an object, URI-encoded as SigV4 wants it for S3: every byte but the
    unreserved A-Z a-z 0-9 - . _ ~ as %XX (UTF-8, upper-case hex), '/' kept between segments.
    Encoded once: S3 signs the path as sent, not double-encoded."""
    segments = [bucket] + key.split("/")
    return base_path.rstrip("/") + "/" + "/".join(
        urllib.parse.quote(segment, safe="") for segment in segments)


def s3_put_object(credentials, bucket, key, body):
    """PUTs `body` (bytes) as s3://bucket/key with the minted `credentials`. Returns (HTTP status,
    S3 error Code or None); status 0 means no answer, and then the second item says why."""
    endpoint = urllib.parse.urlsplit(credentials["endpoint"])
    if endpoint.scheme not in ("http", "https") or not endpoint.hostname:
        return 0, f"unusable S3 endpoint {credentials['endpoint']!r}"
    path = s3_object_path(endpoint.path, bucket, key)
    payload_sha256 = hashlib.sha256(body).hexdigest()
    amz_date = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    signed = {
        "Host": endpoint.netloc.rpartition("@")[2],  # host[:port], as the request sends it
        "x-amz-content-sha256": payload_sha256,
        "x-amz-date": amz_date,
    }
    if credentials.get("session_token"):  # temporary credentials: always, from the engine
        signed["x-amz-security-token"] = credentials["session_token"]
    authorization = sigv4_authorization(
        "PUT", path, "", signed, payload_sha256, credentials["access_key_id"],
        credentials["secret_access_key"], credentials["region"], "s3", amz_date)
    headers = {**signed, "Authorization": authorization,
               "Content-Type": "text/plain; charset=utf-8"}  # not signed: S3 allows that
    connection_class = (http.client.HTTPSConnection if endpoint.scheme == "https"
                        else http.client.HTTPConnection)
    connection = connection_class(endpoint.hostname, endpoint.port, timeout=S3_TIMEOUT_S)
    try:
        connection.request("PUT", path, body=body, headers=headers)
        response = connection.getresponse()
        answer = response.read()
    except (OSError, http.client.HTTPException) as e:
        return 0, str(e)
    finally:
        connection.close()
    if 200 <= response.status < 300:
        return response.status, None
    # An S3 error body is XML: <Error><Code>AccessDenied</Code>...</Error>.
    match = re.search(rb"<Code>([^<]*)</Code>", answer)
    return response.status, match.group(1).decode("utf-8", "replace") if match else None


# --- the demo work ------------------------------------------------------------------------------


class WorkError(Exception):
    """The work failed; reported with `/v1/task/fail`."""

    def __init__(self, code, message, retryable):
        super().__init__(message)
        self.code, self.message, self.retryable = code, message, retryable


def do_work(task_input, interrupted, mint_credentials):
    """Runs the demo work and returns its output (any JSON value), raises WorkError, or returns
    None when `interrupted` (an Event) was set meanwhile: cancelled, or the attempt was lost.
    `mint_credentials()` asks the engine for the attempt's storage credentials: it returns them,
    raises WorkError, or returns None when the attempt was lost."""
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
    output = {"text": text.upper(), "length": len(text)}
    if "write_to" not in task_input:
        return output

    # The write_to demo: store the output text in S3 with credentials minted for this attempt.
    write_to = task_input["write_to"]
    target = parse_s3_url(write_to)
    if target is None:
        raise WorkError("bad_input", "write_to must be s3://bucket/key", retryable=False)
    bucket, key = target
    try:
        body = output["text"].encode("utf-8")
        key.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate ("\ud800" in the JSON)
        raise WorkError("bad_input", "text and write_to must be valid Unicode", retryable=False)
    credentials = mint_credentials()
    if credentials is None or interrupted.is_set():
        return None
    status, why = s3_put_object(credentials, bucket, key, body)
    if status == 0:
        raise WorkError("storage_write_failed", f"S3 PUT {write_to}: no answer: {why}",
                        retryable=True)
    if not 200 <= status < 300:
        raise WorkError("storage_write_failed",
                        f"S3 PUT {write_to}: HTTP {status}" + (f" {why}" if why else ""),
                        retryable=is_transient(status))  # 403 and other 4xx would fail again
    return {**output, "written": write_to, "credentials_expire": credentials.get("expiration")}


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
        # Held by a heartbeat until it has stored its fresh token, and by a credentials call, so
        # that the work never sends a token a heartbeat is replacing at that moment.
        self.call_lock = threading.Lock()

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
        with att.call_lock:
            status, body = engine.task_call("/v1/task/heartbeat", att.token, {})
            if status == 200:
                att.renew(body["capability_token"])
        if status == 200:
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


def mint_credentials(engine, att):
    """POST /v1/task/credentials with the attempt's current token: short-lived S3 credentials
    (access_key_id, secret_access_key, session_token, expiration, endpoint, region) that reach only
    the job's grants. Returns them, or None when the attempt was lost (409/401: stop, as after a
    heartbeat), or raises WorkError. Never log the secret or the session token."""
    with att.call_lock:
        status, body = engine.task_call("/v1/task/credentials", att.token, {})
    if status == 200:
        log("info", "storage credentials minted", expiration=body.get("expiration"),
            endpoint=body.get("endpoint"), **att.fields())
        return body
    code = error_code(body)
    if is_lost(status):
        log("warn", "attempt lost, dropping its work", call="/v1/task/credentials",
            status=status, code=code, **att.fields())
        att.lost.set()
        att.interrupted.set()
        return None
    message = (body or {}).get("error", {}).get("message")
    why = f"no storage credentials: HTTP {status}" + (f" {code}" if code else "") + (
        f": {message}" if message else "")
    if is_transient(status):  # 502 credentials_unavailable (no STS, or STS failed), 5xx, none
        raise WorkError("credentials_unavailable", why, retryable=True)
    # 400 invalid_grants: the job was submitted without grants; another attempt would not help.
    raise WorkError(code or "credentials_refused", why, retryable=False)


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
        output = do_work(att.input, att.interrupted, lambda: mint_credentials(engine, att))
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
