#!/usr/bin/env bash
# Task-list benchmarks (docs/benchmarks.md, "Task lists"):
#   1. staged ingest: upload an N-task JSONL list (purpose "tasks"), create the job, and time
#      from the create to the latch (status leaves `ingesting`) — tasks/s — with the engine's
#      peak RSS above idle (VmHWM after `clear_refs`, minus VmRSS before). The job runs with
#      max_inflight 1 so that its execution takes next to nothing from the ingest; it is cancelled
#      once latched.
#   2. execution: a RUN_N-task list (staged as well) with max_inflight = the model's limit
#      against the fast fake gateway — tasks/s from the create to `completed` — and, in the same
#      run, SINGLE_N single jobs end to end through the C++ load generator, for comparison;
#      then its export (GET /v1/jobs/{id}/export), plain and gzip'd: MB/s and the heap's peak.
#   3. fairness: while a BIG_N-task list runs on the model, a 10-task list is submitted; its
#      time from submission to `completed`.
#
#   bench/task_list.sh [BUILD_DIR]        (default BUILD_DIR: build next to this folder)
#
# Environment: N (1000000), RUN_N (1000000), SINGLE_N (100000), BIG_N (200000), PER_MODEL (64), GLOBAL (100),
# INFLIGHT (the run phase's max_inflight; default PER_MODEL),
# SWITCHYARD (the binary to measure; default BUILD_DIR/switchyard), PHASES (which of "ingest run
# fair" to run; default all three).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
build=$(cd "${1:-$here/../build}" && pwd)
N=${N:-1000000}
RUN_N=${RUN_N:-1000000}
SINGLE_N=${SINGLE_N:-100000}
BIG_N=${BIG_N:-200000}
PER_MODEL=${PER_MODEL:-64}
GLOBAL=${GLOBAL:-100}
PHASES=${PHASES:-ingest run fair}
want() { [[ " $PHASES " == *" $1 "* ]]; }
switchyard=${SWITCHYARD:-$build/switchyard}
fake=$build/tests/fakes/fake_gateway
loadgen=$build/bench/sy_bench_submit
for bin in "$switchyard" "$fake" "$loadgen"; do
  [[ -x $bin ]] || { echo "missing $bin (build it first, see bench/README.md)" >&2; exit 2; }
done

out=$build/bench-results/task-list-$(date -u +%Y%m%dT%H%M%SZ)
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
rss_kb() { awk "/^$2:/ {print \$2}" "/proc/$1/status"; }
# job_field ID FIELD: a top-level string field of the job (curl and sed: no python per poll).
status_of() { curl -sf "$base/v1/jobs/$1" | sed -n 's/.*"status":"\([a-z_]*\)".*/\1/p' | head -1; }
id_of() { sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | head -1; }
# wait_not ID STATUS...: until the job's state is none of them; prints that state. It follows the
# job's event stream (GET …/events) rather than polling: a loop of curl and sed processes every
# 50 ms took about 13 % of the two cores away from what is measured.
wait_not() {
  local line state fd
  exec {fd}< <(curl -sfN --max-time 3600 "$base/v1/jobs/$1/events")
  local stream=$!
  while IFS= read -r -u "$fd" line; do
    line=${line%$'\r'}
    [[ $line == "event: "* ]] || continue
    state=${line#event: }
    local hit=0
    for x in "${@:2}"; do [[ $state == "$x" ]] && hit=1; done
    if [[ $hit == 0 ]]; then
      kill "$stream" 2>/dev/null || true
      exec {fd}<&-
      echo "$state"
      return
    fi
  done
  exec {fd}<&-
  status_of "$1"  # the stream ended (the job is terminal)
}

"$fake" --port 0 --threads 1 >"$out/fake.out" 2>&1 &
fake_pid=$!
pids+=("$fake_pid")
for _ in $(seq 100); do
  fake_port=$(awk '/^listening/ {print $2}' "$out/fake.out" 2>/dev/null || true)
  [[ -n $fake_port ]] && break
  sleep 0.05
done
[[ -n ${fake_port:-} ]] || { echo "fake gateway did not start" >&2; exit 1; }

"$switchyard" serve --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 --data-dir "$work/data" --log-level info \
  --gateway "http://127.0.0.1:$fake_port" --per-model-concurrency "$PER_MODEL" \
  --global-concurrency "$GLOBAL" --files-max-bytes $((1 << 30)) \
  --max-body-bytes $((64 << 20)) >"$out/engine.log" 2>&1 &
engine_pid=$!
pids+=("$engine_pid")
port=$(wait_ready "$work/data") || { echo "the engine did not become ready; see $out/engine.log" >&2; exit 1; }
base=http://127.0.0.1:$port

# gen FILE N PREFIX: N small chat tasks (~150 bytes a line) with custom_ids PREFIX<i>.
gen() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, n, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, "w") as f:
    for i in range(n):
        f.write(json.dumps({"custom_id": f"{prefix}{i}", "body": {"model": "bench-model",
                 "max_tokens": 16, "messages": [{"role": "user", "content": f"task {i}"}]}},
                 separators=(",", ":")) + "\n")
PY
}
upload() { curl -sf -F purpose=tasks -F "file=@$1;filename=tasks.jsonl" "$base/v1/files" | id_of; }
create() {  # create FILE_ID MAX_INFLIGHT
  curl -sf -H 'Content-Type: application/json' "$base/v1/jobs" \
    -d "{\"endpoint\":\"/v1/chat/completions\",\"input_file_id\":\"$1\",\"max_inflight\":$2}" | id_of
}

# --- 1. staged ingest ---------------------------------------------------------------------------
if want ingest; then
gen "$work/ingest.jsonl" "$N" i
bytes=$(stat -c %s "$work/ingest.jsonl")
file=$(upload "$work/ingest.jsonl")
idle_rss=$(rss_kb "$engine_pid" VmRSS)
echo 5 >"/proc/$engine_pid/clear_refs" 2>/dev/null || echo "note: cannot reset VmHWM" >&2
# RssAnon (the heap) and RssFile (LMDB's mapped pages, the page cache) sampled apart: VmHWM
# counts both, and the mapped pages of a growing store are not memory the engine holds.
(
  a=0 f=0
  while kill -0 "$engine_pid" 2>/dev/null && [[ ! -e $work/stop-sampling ]]; do
    read -r x y < <(awk '/^RssAnon:/ {a=$2} /^RssFile:/ {f=$2} END {print a, f}' "/proc/$engine_pid/status")
    ((x > a)) && a=$x
    ((y > f)) && f=$y
    echo "$a $f" >"$work/rss-peaks"
    sleep 0.05
  done
) &
sampler=$!
idle_anon=$(rss_kb "$engine_pid" RssAnon)
t0=$(now_ms)
job=$(create "$file" 1)
t_answer=$(($(now_ms) - t0))
after=$(wait_not "$job" ingesting)
t1=$(now_ms)
touch "$work/stop-sampling"
wait "$sampler" || true
read -r peak_anon peak_file <"$work/rss-peaks"
peak_rss=$(rss_kb "$engine_pid" VmHWM)
ingest_ms=$((t1 - t0))
curl -sf -X POST "$base/v1/jobs/$job/cancel" >/dev/null || true
echo "ingest: $N tasks ($((bytes / 1000000)) MB) answered in ${t_answer} ms, latched in ${ingest_ms} ms" \
  "($(python3 -c "print(f'{$N/max($ingest_ms/1000,1e-3):,.0f}')") tasks/s), status after: $after," \
  "peak RSS +$(python3 -c "print(f'{($peak_rss-$idle_rss)/1024:.1f}')") MB above idle ($((idle_rss / 1024)) MB):" \
  "heap (RssAnon) +$(python3 -c "print(f'{($peak_anon-$idle_anon)/1024:.1f}')") MB, LMDB's mapped pages (RssFile) peak $((peak_file / 1024)) MB"

fi

# --- 2. execution ---------------------------------------------------------------------------------
if want run; then
gen "$work/run.jsonl" "$RUN_N" r
file=$(upload "$work/run.jsonl")
t0=$(now_ms)
job=$(create "$file" "${INFLIGHT:-$PER_MODEL}")
final=$(wait_not "$job" ingesting queued in_progress)
t1=$(now_ms)
list_rate=$(python3 -c "print(f'{$RUN_N/max(($t1-$t0)/1000,1e-3):,.0f}')")
single=$("$loadgen" --port "$port" --connections 64 --requests "$SINGLE_N" --model bench-model \
  --e2e-fake "$fake_port" 2>&1 | awk '/^RESULT/' || true)
echo "execution: $RUN_N tasks in one list $final in $((t1 - t0)) ms ($list_rate tasks/s);" \
  "$SINGLE_N single jobs end to end: $single"
# export, plain then gzip'd, with the heap's peak over both
idle_anon=$(rss_kb "$engine_pid" RssAnon)
idle_rss=$(rss_kb "$engine_pid" VmRSS)
echo 5 >"/proc/$engine_pid/clear_refs" 2>/dev/null || echo "note: cannot reset VmHWM" >&2
rm -f "$work/stop-sampling"
(
  a=0
  while [[ ! -e $work/stop-sampling ]]; do
    x=$(awk '/^RssAnon:/ {print $2}' "/proc/$engine_pid/status")
    ((x > a)) && a=$x
    echo "$a" >"$work/anon-peak"
    sleep 0.05
  done
) &
sampler=$!
for enc in identity gzip; do
  t0=$(now_ms)
  size=$(curl -sf -H "Accept-Encoding: $enc" "$base/v1/jobs/$job/export" -o "$work/export.$enc" -w '%{size_download}')
  t1=$(now_ms)
  lines=$([[ $enc == gzip ]] && gzip -dc "$work/export.$enc" | wc -l || wc -l <"$work/export.$enc")
  echo "export ($enc): $lines lines, $((size / 1000000)) MB in $((t1 - t0)) ms" \
    "($(python3 -c "print(f'{$size/1e6/max(($t1-$t0)/1000,1e-3):.0f}')") MB/s sent," \
    "$(python3 -c "print(f'{$lines/max(($t1-$t0)/1000,1e-3):,.0f}')") tasks/s)"
done
touch "$work/stop-sampling"
wait "$sampler" || true
echo "export heap (RssAnon) peak +$(python3 -c "print(f'{($(cat "$work/anon-peak")-$idle_anon)/1024:.1f}')") MB," \
  "peak RSS (VmHWM) +$(python3 -c "print(f'{($(rss_kb "$engine_pid" VmHWM)-$idle_rss)/1024:.1f}')") MB above $((idle_rss / 1024)) MB"

fi

# --- 3. fairness ----------------------------------------------------------------------------------
if want fair; then
gen "$work/big.jsonl" "$BIG_N" b
gen "$work/small.jsonl" 10 s
file=$(upload "$work/big.jsonl")
small_file=$(upload "$work/small.jsonl")
big=$(create "$file" 256)
until [[ $(curl -sf "$base/v1/jobs/$big" | sed -n 's/.*"completed":\([0-9]*\).*/\1/p') -gt 5000 ]]; do sleep 0.1; done
t0=$(now_ms)
small=$(create "$small_file" 10)
wait_not "$small" ingesting queued in_progress >/dev/null
t1=$(now_ms)
big_done=$(curl -sf "$base/v1/jobs/$big" | sed -n 's/.*"completed":\([0-9]*\).*/\1/p')
echo "fairness: a 10-task list beside a $BIG_N-task list (window 256) completed in $((t1 - t0)) ms;" \
  "the big one had $big_done tasks done then"
curl -sf -X POST "$base/v1/jobs/$big/cancel" >/dev/null || true
fi
echo "logs: $out"
