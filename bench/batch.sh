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
# Environment: LINES (50000), LINE_BYTES (4000), RUN_N (50000), PER_MODEL (10), GLOBAL (100),
# SWITCHYARD (the binary to measure; default BUILD_DIR/switchyard).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
build=$(cd "${1:-$here/../build-bench}" && pwd)
LINES=${LINES:-50000}
LINE_BYTES=${LINE_BYTES:-4000}
RUN_N=${RUN_N:-50000}
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

"$fake" --port 0 --threads 1 >"$out/fake.out" 2>&1 &
fake_pid=$!
pids+=("$fake_pid")
for _ in $(seq 100); do
  fake_port=$(awk '/^listening/ {print $2}' "$out/fake.out")
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

"$switchyard" serve --config "$work/switchyard.yaml" --listen 127.0.0.1:0 --data-dir "$work/data" \
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
t2=$(now_ms)
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
gen "$work/run.jsonl" "$RUN_N" 300
file_id=$(curl -sf -F purpose=batch -F "file=@$work/run.jsonl;filename=run.jsonl" "$base/v1/files" | field "['id']")
batch=$(curl -sf -H 'Content-Type: application/json' "$base/v1/batches" \
  -d "{\"input_file_id\":\"$file_id\",\"endpoint\":\"/v1/chat/completions\",\"completion_window\":\"24h\"}" | field "['id']")
while [[ $(status_of "$batch") == validating ]]; do sleep 0.005; done
e0=$(cpu_ticks "$engine_pid")
f0=$(cpu_ticks "$fake_pid")
m0=$(machine_ticks)
# Waits for the engine's "batch finished" log line: a grep every 0.2 s is the cheapest poll
# (a curl per poll cost 15-20 % of a core here, taken from the engine and the fake).
until grep -q "\"batch_id\":\"$batch\".*\"msg\":\"batch finished\"" "$out/engine.log"; do
  kill -0 "$engine_pid" 2>/dev/null || { echo "the engine exited" >&2; exit 1; }
  sleep 0.2
done
e1=$(cpu_ticks "$engine_pid")
f1=$(cpu_ticks "$fake_pid")
m1=$(machine_ticks)
# The engine's own clock: from its "dispatching" log line to "batch finished" (output files
# written and committed); the polling above only tells when to stop looking.
log_ms() {  # log_ms MSG: the ts of the batch's log line MSG, in ms since the epoch
  grep "\"msg\":\"$1\"" "$out/engine.log" | grep "$batch" | head -1 |
    sed 's/.*"ts":"\([^"]*\)".*/\1/' | python3 -c "import sys,datetime; print(int(datetime.datetime.fromisoformat(sys.stdin.read().strip().replace('Z','+00:00')).timestamp()*1000))"
}
r0=$(log_ms dispatching)
r1=$(log_ms "batch finished")
finalize_ms=$(grep '"msg":"batch finished"' "$out/engine.log" | grep "$batch" | sed -n 's/.*"finalize_ms":\([0-9]*\).*/\1/p')
hz=$(getconf CLK_TCK)
engine_cpu=$(python3 -c "print(f'{100*($e1-$e0)/$hz/max(($r1-$r0)/1000,1e-3):.0f}% of a core, {1e6*($e1-$e0)/$hz/$RUN_N:.0f} us CPU per request')")
fake_cpu=$(python3 -c "print(f'{100*($f1-$f0)/$hz/max(($r1-$r0)/1000,1e-3):.0f}% of a core, {1e6*($f1-$f0)/$hz/$RUN_N:.0f} us CPU per request')")
machine_cpu=$(busy_share "$m0" "$m1")
final=$(curl -sf "$base/v1/batches/$batch")
counts=$(echo "$final" | field "['request_counts']")
engine_rate=$(python3 -c "print(f'{$RUN_N/max(($r1-$r0)/1000,1e-3):.0f}')")

conc=$((PER_MODEL * 3))
[[ $conc -gt $GLOBAL ]] && conc=$GLOBAL
d0=$(now_ms)
f2=$(cpu_ticks "$fake_pid")
m2=$(machine_ticks)
"$loadgen" --raw --port "$fake_port" --connections "$conc" --requests "$RUN_N" --target /v1/chat/completions \
  --model model-a >"$out/direct.txt" 2>&1 || true
d1=$(now_ms)
f3=$(cpu_ticks "$fake_pid")
m3=$(machine_ticks)
direct_machine_cpu=$(busy_share "$m2" "$m3")
direct_fake_cpu=$(python3 -c "print(f'{100*($f3-$f2)/$hz/max(($d1-$d0)/1000,1e-3):.0f}% of a core, {1e6*($f3-$f2)/$hz/$RUN_N:.0f} us CPU per request')")
direct_rate=$(sed -n 's/^RESULT //p' "$out/direct.txt" | tr ' ' '\n' | sed -n 's/^rate=//p')
ratio=$(python3 -c "print(f'{100*$engine_rate/max(float(\"${direct_rate:-0}\" or 0),1):.0f}')")

{
  echo "## batch ingestion: $LINES lines, $mb MB"
  echo "  upload (multipart, streamed to disk)   $upload_rate MB/s"
  echo "  validation + plans                     $ingest_rate MB/s  (${ingest_ms} ms; status after: $ingest_status)"
  echo "  upload + validation                    $ingest_both MB/s"
  echo "  engine peak RSS above idle             $rss_growth MiB  (idle $((idle_rss / 1024)) MiB)"
  echo "## batch execution: $RUN_N lines, 3 models, per-model $PER_MODEL, global $GLOBAL"
  echo "  engine (dispatching -> finished)       $engine_rate req/s   counts $counts  (finalize ${finalize_ms:-?} ms)"
  echo "    engine CPU                           $engine_cpu"
  echo "    fake gateway CPU                     $fake_cpu"
  echo "    whole machine                        $machine_cpu"
  echo "  direct load generator, $conc conns     ${direct_rate:-?} req/s"
  echo "    fake gateway CPU                     $direct_fake_cpu"
  echo "    whole machine                        $direct_machine_cpu"
  echo "  engine / direct                        $ratio %"
} | tee "$out/summary.txt"
