#!/usr/bin/env bash
# Switchyard benchmarks: durable submissions, end-to-end jobs/s, and the fake gateway's capacity.
#
#   bench/run.sh [BUILD_DIR]          (default BUILD_DIR: build-bench next to this folder)
#
# Needs BUILD_DIR/switchyard, BUILD_DIR/tests/fakes/fake_gateway, BUILD_DIR/bench/sy_bench_submit
# and BUILD_DIR/bench/sy_bench_baseline (the machine's own figures, printed first by
# bench/baseline.sh).
# Sizes come from the environment: SUBMIT_CONNS (64), SUBMIT_N (50000), E2E_N (20000),
# RAW_N (50000), PER_MODEL (100), GLOBAL (100). SWITCHYARD: the engine binary to measure (default
# BUILD_DIR/switchyard; another build's, to compare builds with the same tools). PHASES: which
# phases run, of "0 a1 a2 b c" (default all; 0 is the machine baseline). Each engine gets a fresh data dir on the build
# dir's filesystem (not tmpfs, so fsync is real); logs and per-thread CPU stay in
# BUILD_DIR/bench-results/<timestamp>/. Every process this script starts is stopped by its PID.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
build=$(cd "${1:-$here/../build-bench}" && pwd)
SUBMIT_CONNS=${SUBMIT_CONNS:-64}
SUBMIT_N=${SUBMIT_N:-50000}
E2E_N=${E2E_N:-20000}
RAW_N=${RAW_N:-50000}
PER_MODEL=${PER_MODEL:-100}
GLOBAL=${GLOBAL:-100}

switchyard=${SWITCHYARD:-$build/switchyard}
PHASES=" ${PHASES:-0 a1 a2 b c} "
runs() { [[ $PHASES == *" $1 "* ]]; }
fake=$build/tests/fakes/fake_gateway
loadgen=$build/bench/sy_bench_submit
for bin in "$switchyard" "$fake" "$loadgen"; do
  [[ -x $bin ]] || { echo "missing $bin (build it first, see bench/README.md)" >&2; exit 2; }
done

out=$build/bench-results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
work=$(mktemp -d "$build/bench-data.XXXXXX")
pids=()

stop_pid() {  # stop_pid PID: SIGTERM, wait up to 15 s, then SIGKILL
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 150); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  echo "pid $pid did not stop in 15 s; killing it" >&2
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  for pid in "${pids[@]}"; do stop_pid "$pid"; done
  rm -rf "$work"
}
trap cleanup EXIT

forget_pid() {  # forget_pid PID: drop it from the cleanup list once stopped
  local keep=() p
  for p in "${pids[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
  pids=("${keep[@]}")
}

start_fake() {  # start_fake NAME [ARGS...]: sets fake_pid and fake_port
  local name=$1
  shift
  "$fake" --port 0 --threads 1 "$@" >"$out/$name.out" 2>&1 &
  fake_pid=$!
  pids+=("$fake_pid")
  for _ in $(seq 100); do
    fake_port=$(awk '/^listening/ {print $2}' "$out/$name.out" 2>/dev/null || true)
    [[ -n $fake_port ]] && return 0
    sleep 0.05
  done
  echo "fake gateway $name did not start" >&2
  exit 1
}

start_engine() {  # start_engine NAME GATEWAY_PORT: sets engine_pid and engine_port
  local name=$1 gw=$2 dir=$work/$1
  mkdir -p "$dir"
  "$switchyard" serve --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 --data-dir "$dir" --gateway "http://127.0.0.1:$gw" \
    --log-level warn --per-model-concurrency "$PER_MODEL" --global-concurrency "$GLOBAL" \
    >"$out/$name.log" 2>&1 &
  engine_pid=$!
  pids+=("$engine_pid")
  engine_port=$(wait_ready "$dir") && return 0
  echo "engine $name did not become ready; see $out/$name.log" >&2
  exit 1
}

stop_engine() {
  stop_pid "$engine_pid"
  forget_pid "$engine_pid"
}

# Per-thread CPU time (user+system clock ticks) of the given processes, one "pid tid ticks name"
# line per thread (lib.sh's thread_snapshot, reordered for cpu_report). Comparing two snapshots
# gives each thread's CPU over a phase.
cpu_snapshot() {
  thread_snapshot "$@" | awk '{ split($1, id, "-"); print id[1], id[2], $4, $2 }'
}

cpu_report() {  # cpu_report BEFORE AFTER SECONDS REQUESTS LABELS...: per process, busiest threads
  local before=$1 after=$2 secs=$3 reqs=$4
  shift 4
  local hz
  hz=$(getconf CLK_TCK)
  awk -v hz="$hz" -v secs="$secs" -v reqs="$reqs" -v labels="$*" '
    BEGIN { n = split(labels, l, " "); for (i = 1; i <= n; i += 2) name[l[i]] = l[i + 1] }
    NR == FNR { b[$1 " " $2] = $3; next }
    { d = ($3 - b[$1 " " $2]) / hz; proc[$1] += d; if (d > 0) t[$1 " " $2] = d; tn[$1 " " $2] = $4 }
    END {
      for (p in proc)
        printf "  %-12s %5.0f%% CPU (of one core), %6.1f us CPU per request\n", name[p],
          100 * proc[p] / secs, 1e6 * proc[p] / reqs
      for (k in t) if (100 * t[k] / secs >= 10) {
        split(k, x, " ")
        line = sprintf("    %-12s thread %-8s %5.0f%%  %s", name[x[1]], x[2],
                       100 * t[k] / secs, tn[k])
        print line | "sort -k4,4nr"
      }
    }' "$before" "$after"
}

machine_busy() {  # busy clock ticks of all cores together (user+nice+system+irq+softirq+steal)
  awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}

nats_pid_of() { pgrep -P "$1" nats-server | head -1 || true; }

result_field() {  # result_field FILE KEY
  sed -n 's/^RESULT //p' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# A measured phase: runs the load generator while sampling the engine's, nats-server's and the
# fake's per-thread CPU. measure NAME LOADGEN_ARGS...
measure() {
  local name=$1
  shift
  local procs=("$fake_pid") labels="$fake_pid fake" nats
  if [[ -n $engine_pid ]]; then
    procs+=("$engine_pid")
    labels+=" $engine_pid switchyard"
    nats=$(nats_pid_of "$engine_pid")
    [[ -n $nats ]] && { procs+=("$nats"); labels+=" $nats nats-server"; }
  fi
  thread_snapshot "${procs[@]}" >"$out/$name.threads0"  # with context switches per thread
  cpu_snapshot "${procs[@]}" >"$out/$name.cpu0"
  local t0 t1 self0 self1
  t0=$(date +%s.%N)
  self0=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
  local busy0 busy1
  busy0=$(machine_busy)
  "$loadgen" "$@" | tee "$out/$name.txt" || true
  t1=$(date +%s.%N)
  cpu_snapshot "${procs[@]}" >"$out/$name.cpu1"
  thread_snapshot "${procs[@]}" >"$out/$name.threads1"
  busy1=$(machine_busy)
  echo "  CPU during $name ($(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s wall):"
  # The load generator is a child of this shell: its CPU shows in this shell's cutime+cstime.
  self1=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
  local reqs
  reqs=$(result_field "$out/$name.txt" requests)
  {
    awk -v a="$t0" -v b="$t1" -v c0="$self0" -v c1="$self1" -v hz="$(getconf CLK_TCK)" \
      -v n="$reqs" \
      'BEGIN { printf "  %-12s %5.0f%% CPU (of one core), %6.1f us CPU per request\n", "loadgen",
               100 * (c1 - c0) / hz / (b - a), 1e6 * (c1 - c0) / hz / n }'
    # Everything on the machine, to tell whether anything else was running during the phase.
    awk -v a="$t0" -v b="$t1" -v c0="$busy0" -v c1="$busy1" -v hz="$(getconf CLK_TCK)" \
      'BEGIN { printf "  %-12s %5.0f%% CPU (of one core; %d cores in all)\n", "whole machine",
               100 * (c1 - c0) / hz / (b - a), '"$(nproc)"' }'
    cpu_report "$out/$name.cpu0" "$out/$name.cpu1" \
      "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$reqs" $labels
  } | tee "$out/$name.cpu"
}

echo "== machine: $(nproc) cores, $(uname -r); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== results and logs: $out"
if runs 0; then
  echo "== (0) the machine: LMDB commits, JetStream publish and pull (bench/baseline.sh)"
  "$here/baseline.sh" "$build" | grep -v '^RESULT' | tee "$out/baseline.txt"
fi

start_fake fake_fast
fast_pid=$fake_pid fast_port=$fake_port
start_fake fake_slow --latency-ms 600000
slow_pid=$fake_pid slow_port=$fake_port

# (a1) Durable submissions while execution is parked: the slow gateway holds the first
# $GLOBAL requests for 10 minutes, so the engine's CPU goes to accepting jobs only.
if runs a1; then
  echo "== (a1) durable submissions, gateway parked: $SUBMIT_CONNS connections x $SUBMIT_N requests"
  start_engine engine_a1 "$slow_port"
  fake_pid=$slow_pid
  measure a1 --port "$engine_port" --connections "$SUBMIT_CONNS" --requests "$SUBMIT_N"
  stop_engine
fi

# (a2) The same load while the engine also executes every job against the fast fake.
if runs a2; then
  echo "== (a2) durable submissions, jobs executing against the fast fake"
  start_engine engine_a2 "$fast_port"
  fake_pid=$fast_pid
  measure a2 --port "$engine_port" --connections "$SUBMIT_CONNS" --requests "$SUBMIT_N"
  stop_engine
fi

# (b) End to end: submit E2E_N jobs, then wait until every one is completed.
if runs b; then
  echo "== (b) end to end: $E2E_N jobs, per-model $PER_MODEL, global $GLOBAL"
  curl -sf -XPOST "http://127.0.0.1:$fast_port/_fake/control" -d '{"reset":true}' >/dev/null
  fake_pid=$fast_pid
  start_engine engine_b "$fast_port"
  measure b --port "$engine_port" --connections "$SUBMIT_CONNS" --requests "$E2E_N" \
    --e2e-fake "$fast_port" --ids-out "$work/b.ids"
  echo "  untimed check of every job's status:"
  "$loadgen" --port "$engine_port" --verify "$work/b.ids" | tee "$out/b-verify.txt" || true
  stop_engine
fi

# (c) The fake gateway's own capacity, same process as (a2) and (b), no engine running.
if runs c; then
  echo "== (c) fake gateway capacity: raw chat completions, $SUBMIT_CONNS connections x $RAW_N"
  engine_pid=""
  fake_pid=$fast_pid
  measure c --port "$fast_port" --raw --connections "$SUBMIT_CONNS" --requests "$RAW_N"
fi

echo
echo "== summary ($(nproc) cores; load at end: $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-44s %10s %8s %8s %8s %8s %6s\n' phase "req/s" "p50 ms" "p99 ms" "p99.9" "max ms" bad
for p in a1 a2 b c; do
  runs "$p" || continue
  case $p in
    a1) label="(a1) submissions, execution parked" ;;
    a2) label="(a2) submissions, executing concurrently" ;;
    b) label="(b) submissions of the end-to-end run" ;;
    c) label="(c) fake gateway, raw chat completions" ;;
  esac
  f=$out/$p.txt
  printf '%-44s %10s %8s %8s %8s %8s %6s\n' "$label" "$(result_field "$f" rate)" \
    "$(result_field "$f" p50)" "$(result_field "$f" p99)" "$(result_field "$f" p999)" \
    "$(result_field "$f" max)" "$(result_field "$f" bad)"
done
if runs b; then
  printf '%-44s %10s   (%s jobs in %s s; completed %s of %s; fake saw all at %s s)\n' \
    "(b) end to end, jobs/s" "$(result_field "$out/b.txt" e2e_jobs_per_s)" "$E2E_N" \
    "$(result_field "$out/b.txt" e2e_s)" "$(result_field "$out/b-verify.txt" completed)" "$E2E_N" \
    "$(result_field "$out/b.txt" fake_all_s)"
fi
