#!/usr/bin/env bash
# Batch API benchmarks (docs/benchmarks.md, "Batches"):
#   1. ingestion: upload a LINES-line (~INGEST_MB MB) JSONL file and let the engine validate it
#      and write its plans — MB/s of upload and of validation, and the engine's peak RSS above
#      idle (VmHWM after `clear_refs`, minus VmRSS before the upload);
#   2. execution: a RUN_N-line batch across 3 models against the fast fake gateway — requests/s
#      from in_progress to completed — and, in the same run, a direct load generator against the
#      same fake with the same concurrency (3 models × per-model limit).
#
#   bench/batch.sh [BUILD_DIR]        (default BUILD_DIR: build-bench next to this folder)
#
# Environment: LINES (50000), LINE_BYTES (4000), RUN_N (50000), ROUNDS (3), PER_MODEL (10), GLOBAL (100),
# SWITCHYARD (the binary to measure; default BUILD_DIR/switchyard).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
build=$(cd "${1:-$here/../build-bench}" && pwd)
LINES=${LINES:-50000}
LINE_BYTES=${LINE_BYTES:-4000}
RUN_N=${RUN_N:-50000}
ROUNDS=${ROUNDS:-3}
# PIN=1: the fake gateway runs on CPU 1 and everything else (the engine with its nats-server,
# the load generator) on CPU 0, as if the gateway had a machine of its own. Off by default: it
# did not make consecutive rounds steadier here, and it confines all of the engine's threads
# to one CPU.
PIN=${PIN:-0}
cpu0=() cpu1=()  # command prefixes (taskset execs the command: $! stays its pid)
[[ $PIN == 1 ]] && cpu0=(taskset -c 0) cpu1=(taskset -c 1)
PER_MODEL=${PER_MODEL:-10}
GLOBAL=${GLOBAL:-100}

switchyard=${SWITCHYARD:-$build/switchyard}
fake=$build/tests/fakes/fake_gateway
loadgen=$build/bench/sy_bench_submit
for bin in "$switchyard" "$fake" "$loadgen"; do
  [[ -x $bin ]] || { echo "missing $bin (build it first, see bench/README.md)" >&2; exit 2; }
done
command -v curl >/dev/null || { echo "needs curl" >&2; exit 2; }

out=$build/bench-results/batch-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
work=$(mktemp -d "$build/bench-data.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

now_ms() { date +%s%3N; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # user + system, clock ticks
machine_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6}' /proc/stat; }  # busy idle
# busy_share BEFORE AFTER: the machine's busy share between two machine_ticks, as "N% of 200%"
busy_share() {
  python3 -c "import sys; b0,i0,b1,i1=map(int,sys.argv[1:]); print(f'{200*(b1-b0)/max(b1-b0+i1-i0,1):.0f}% of 200%')" $1 $2
}

"${cpu1[@]}" "$fake" --port 0 --threads 1 >"$out/fake.out" 2>&1 &
fake_pid=$!
pids+=("$fake_pid")
for _ in $(seq 100); do
  fake_port=$(awk '/^listening/ {print $2}' "$out/fake.out" 2>/dev/null || true)
  [[ -n $fake_port ]] && break
  sleep 0.05
done
[[ -n ${fake_port:-} ]] || { echo "fake gateway did not start" >&2; exit 1; }

cat >"$work/switchyard.yaml" <<EOF
model_gateways:
EOF
for m in model-a model-b model-c; do
  cat >>"$work/switchyard.yaml" <<EOF
  $m:
    url: http://127.0.0.1:$fake_port
    request_timeout: 60s
    max_retries: 2
    initial_backoff: 100ms
    max_backoff: 1s
EOF
done

"${cpu0[@]}" "$switchyard" serve --config "$work/switchyard.yaml" --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 --data-dir "$work/data" \
  --log-level info --per-model-concurrency "$PER_MODEL" --global-concurrency "$GLOBAL" \
  >"$out/engine.log" 2>&1 &
engine_pid=$!
pids+=("$engine_pid")
port=$(wait_ready "$work/data") || {
  echo "the engine did not become ready; see $out/engine.log" >&2
  exit 1
}
base=http://127.0.0.1:$port

# gen FILE N BYTES: N request lines of about BYTES bytes across 3 models and 20 system prompts.
gen() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, random, sys
path, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(7)
models = ["model-a", "model-b", "model-c"]
words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
with open(path, "w") as f:
    for i in range(n):
        head = {"custom_id": f"req-{i}", "method": "POST", "url": "/v1/chat/completions",
                "body": {"model": models[i % 3], "max_tokens": 16,
                         "messages": [{"role": "system", "content": f"You are assistant number {i % 20}."},
                                      {"role": "user", "content": ""}]}}
        base = len(json.dumps(head))
        filler = []
        total = 0
        while total < size - base:
            w = random.choice(words)
            filler.append(w)
            total += len(w) + 1
        head["body"]["messages"][1]["content"] = " ".join(filler)
        f.write(json.dumps(head) + "\n")
PY
}

field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval('d' + sys.argv[1]))" "$1"; }
# curl and sed only (a python3 per poll costs ~40 ms of CPU, which took most of a core from the
# engine and the fake in earlier runs of this script).
status_of() { curl -sf "$base/v1/batches/$1" | sed -n 's/.*"status":"\([a-z_]*\)".*/\1/p'; }
rss_kb() { awk "/^$2:/ {print \$2}" "/proc/$1/status"; }

# --- 1. ingestion ---------------------------------------------------------------------------
gen "$work/ingest.jsonl" "$LINES" "$LINE_BYTES"
bytes=$(stat -c %s "$work/ingest.jsonl")
idle_rss=$(rss_kb "$engine_pid" VmRSS)
echo 5 >"/proc/$engine_pid/clear_refs" 2>/dev/null || echo "note: cannot reset VmHWM; peak is since start" >&2
t0=$(now_ms)
file_id=$(curl -sf -F purpose=batch -F "file=@$work/ingest.jsonl;filename=ingest.jsonl" "$base/v1/files" | field "['id']")
t1=$(now_ms)
# Ingestion ends when the batch leaves `validating`; it is then cancelled (its dispatch is not
# what this part measures; the peak RSS read includes the first moments of it).
batch=$(curl -sf -H 'Content-Type: application/json' "$base/v1/batches" \
  -d "{\"input_file_id\":\"$file_id\",\"endpoint\":\"/v1/chat/completions\",\"completion_window\":\"24h\"}" | field "['id']")
while [[ $(status_of "$batch") == validating ]]; do sleep 0.01; done
ingest_status=$(status_of "$batch")
peak_rss=$(rss_kb "$engine_pid" VmHWM)
curl -s -X POST "$base/v1/batches/$batch/cancel" >/dev/null  # 409 when it already finished
until [[ $(status_of "$batch") =~ ^(cancelled|completed|failed|expired)$ ]]; do sleep 0.05; done

mb=$(python3 -c "print(f'{$bytes/1e6:.1f}')")
upload_rate=$(python3 -c "print(f'{$bytes/1e6/max(($t1-$t0)/1000,1e-3):.0f}')")
# The engine logs how long validation and plan writing took ("input validated", ms); the
# polling above only bounds it from above.
ingest_ms=$(grep '"input validated"' "$out/engine.log" | grep "$batch" | sed 's/.*"ms":\([0-9]*\).*/\1/' | head -1)
ingest_rate=$(python3 -c "print(f'{$bytes/1e6/max(${ingest_ms:-0}/1000,1e-3):.0f}')")
ingest_both=$(python3 -c "print(f'{$bytes/1e6/max(($t1-$t0+${ingest_ms:-0})/1000,1e-3):.0f}')")
rss_growth=$(python3 -c "print(f'{($peak_rss-$idle_rss)/1024:.1f}')")

# --- 2. execution -----------------------------------------------------------------------------
# ROUNDS rounds, each a batch of the same input file through the engine and then the direct load
# generator with the very same request bodies against the same fake; the ratio is taken per
# round (the two runs of a round are seconds apart) and the median round is the result.
gen "$work/run.jsonl" "$RUN_N" 300
file_id=$(curl -sf -F purpose=batch -F "file=@$work/run.jsonl;filename=run.jsonl" "$base/v1/files" | field "['id']")
hz=$(getconf CLK_TCK)
conc=$((PER_MODEL * 3))
[[ $conc -gt $GLOBAL ]] && conc=$GLOBAL
# share TICKS MS: "N% of a core, M us CPU per request" for TICKS of CPU over MS of wall time.
share() {
  python3 -c "print(f'{100*$1/$hz/max($2/1000,1e-3):.0f}% of a core, {1e6*$1/$hz/$RUN_N:.0f} us CPU per request')"
}
# log_ms BATCH MSG: the ts of the batch's log line MSG, in ms since the epoch.
log_ms() {
  grep "\"msg\":\"$2\"" "$out/engine.log" | grep "$1" | head -1 |
    sed 's/.*"ts":"\([^"]*\)".*/\1/' | python3 -c "import sys,datetime; print(int(datetime.datetime.fromisoformat(sys.stdin.read().strip().replace('Z','+00:00')).timestamp()*1000))"
}

# engine_round N: one batch of run.jsonl; sets engine_rate and prints the round's details.
engine_round() {
  local batch e0 e1 f0 f1 m0 m1 r0 r1 counts finalize_ms
  batch=$(curl -sf -H 'Content-Type: application/json' "$base/v1/batches" \
    -d "{\"input_file_id\":\"$file_id\",\"endpoint\":\"/v1/chat/completions\",\"completion_window\":\"24h\"}" | field "['id']")
  while [[ $(status_of "$batch") == validating ]]; do sleep 0.005; done
  e0=$(cpu_ticks "$engine_pid")
  f0=$(cpu_ticks "$fake_pid")
  thread_snapshot "$engine_pid" "$fake_pid" >"$work/threads-before"
  m0=$(machine_ticks)
  # Waits for the engine's "batch finished" log line: a grep every 0.2 s is the cheapest poll
  # (a curl per poll cost 15-20 % of a core here, taken from the engine and the fake).
  until grep -q "\"batch_id\":\"$batch\".*\"msg\":\"batch finished\"" "$out/engine.log"; do
    kill -0 "$engine_pid" 2>/dev/null || { echo "the engine exited" >&2; exit 1; }
    sleep 0.2
  done
  e1=$(cpu_ticks "$engine_pid")
  f1=$(cpu_ticks "$fake_pid")
  thread_snapshot "$engine_pid" "$fake_pid" >"$work/threads-after"
  m1=$(machine_ticks)
  # The engine's own clock: from its "dispatching" log line to "batch finished" (output files
  # written and committed); the polling above only tells when to stop looking.
  r0=$(log_ms "$batch" dispatching)
  r1=$(log_ms "$batch" "batch finished")
  finalize_ms=$(grep '"msg":"batch finished"' "$out/engine.log" | grep "$batch" | sed -n 's/.*"finalize_ms":\([0-9]*\).*/\1/p')
  counts=$(curl -sf "$base/v1/batches/$batch" | field "['request_counts']")
  engine_rate=$(python3 -c "print(f'{$RUN_N/max(($r1-$r0)/1000,1e-3):.0f}')")
  echo "  engine (dispatching -> finished)       $engine_rate req/s   counts $counts  (finalize ${finalize_ms:-?} ms)"
  echo "    engine CPU                           $(share $((e1 - e0)) $((r1 - r0)))"
  echo "    fake gateway CPU                     $(share $((f1 - f0)) $((r1 - r0)))"
  echo "    whole machine                        $(busy_share "$m0" "$m1")"
  thread_report "$work/threads-before" "$work/threads-after" "$RUN_N"
}

# direct_round LOG [ARGS...]: the load generator alone against the fake, the same number of
# requests over the same number of connections; sets direct_rate and prints the details.
direct_round() {
  local log=$1 d0 d1 f0 f1 m0 m1
  shift
  d0=$(now_ms)
  f0=$(cpu_ticks "$fake_pid")
  m0=$(machine_ticks)
  "${cpu0[@]}" "$loadgen" --raw --port "$fake_port" --connections "$conc" --requests "$RUN_N" \
    --target /v1/chat/completions "$@" >"$log" 2>&1 || true
  d1=$(now_ms)
  f1=$(cpu_ticks "$fake_pid")
  m1=$(machine_ticks)
  direct_rate=$(sed -n 's/^RESULT //p' "$log" | tr ' ' '\n' | sed -n 's/^rate=//p')
  echo "    fake gateway CPU                     $(share $((f1 - f0)) $((d1 - d0)))"
  echo "    whole machine                        $(busy_share "$m0" "$m1")"
}

rounds_out=$work/rounds.txt
for round in $(seq "$ROUNDS"); do
  {
    echo "round $round"
    engine_round
    # The basis of the ratio: the very request bodies of the batch (the fake's cost per
    # request grows with the body it parses and answers).
    direct_round "$out/direct-$round.txt" --bodies "$work/run.jsonl" >"$work/details"
    echo "  direct load generator, $conc conns, the batch's bodies   ${direct_rate:-?} req/s"
    cat "$work/details"
    ratio=$(python3 -c "print(f'{100*$engine_rate/max(float(\"${direct_rate:-0}\" or 0),1):.0f}')")
    echo "  engine / direct                        $ratio %"
    echo "$ratio $engine_rate ${direct_rate:-0}" >>"$work/ratios"
  } | tee -a "$rounds_out"
done
median=$(sort -n "$work/ratios" | awk '{r[NR] = $0} END {print r[int((NR + 1) / 2)]}')
read -r median_ratio median_engine median_direct <<<"$median"
# For comparison with results before 2026-11-24: the direct rate with a minimal chat body.
direct_round "$out/direct-small.txt" --model model-a >"$work/small-details"
small_rate=$direct_rate
{
  echo "## batch ingestion: $LINES lines, $mb MB"
  echo "  upload (multipart, streamed to disk)   $upload_rate MB/s"
  echo "  validation + plans                     $ingest_rate MB/s  (${ingest_ms} ms; status after: $ingest_status)"
  echo "  upload + validation                    $ingest_both MB/s"
  echo "  engine peak RSS above idle             $rss_growth MiB  (idle $((idle_rss / 1024)) MiB)"
  echo "## batch execution: $RUN_N lines, 3 models, per-model $PER_MODEL, global $GLOBAL, $ROUNDS rounds, PIN=$PIN"
  cat "$rounds_out"
  echo "  median round: engine $median_engine req/s, direct $median_direct req/s: engine / direct $median_ratio %"
  echo "  direct load generator, $conc conns, a minimal body (not the batch's)   ${small_rate:-?} req/s"
  cat "$work/small-details"
} | tee "$out/summary.txt"
