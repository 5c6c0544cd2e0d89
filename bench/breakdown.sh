#!/usr/bin/env bash
# Where a job's cost goes: one measured phase of N jobs, and per job the engine's and its
# nats-server's CPU, their system calls and context switches, the JetStream messages the engine
# published (by kind), the LMDB commits and the bytes the engine wrote to disk per commit (its
# pages), and the bytes nats-server wrote (docs/benchmarks.md, "Where a job's cost goes").
#
#   bench/breakdown.sh [BUILD_DIR]      (default BUILD_DIR: build next to this folder)
#
# Environment: SWITCHYARD (the engine binary; default BUILD_DIR/switchyard), MODE (parked: the
# gateway holds every request, so only submissions cost; e2e: the fast fake, and the phase lasts
# until every job completed), N (30000), CONNS (64), SLOTS (per-model and global concurrency, 64),
# SERVE_ARGS (more `switchyard serve` arguments, e.g. "--nats-events all"). Needs BUILD_DIR's
# fake gateway and load generator, and `perf` (for the system calls). Every process it starts is
# stopped on exit. The last line is `RESULT key=value ...`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
build=$(cd "${1:-$here/../build}" && pwd)
switchyard=${SWITCHYARD:-$build/switchyard}
MODE=${MODE:-parked}
N=${N:-30000}
CONNS=${CONNS:-64}
SLOTS=${SLOTS:-64}
read -r -a serve_args <<<"${SERVE_ARGS:-}"
command -v perf >/dev/null || { echo "needs perf (linux-perf)" >&2; exit 2; }
work=$(mktemp -d "$build/breakdown.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fake_args=(--port 0 --threads 1)
[[ $MODE == parked ]] && fake_args+=(--latency-ms 600000)
"$build/tests/fakes/fake_gateway" "${fake_args[@]}" >"$work/fake.out" 2>&1 &
pids+=($!)
for _ in $(seq 200); do
  fake_port=$(awk '/^listening/ {print $2}' "$work/fake.out" 2>/dev/null || true)
  [[ -n $fake_port ]] && break
  sleep 0.05
done
[[ -n $fake_port ]] || { echo "the fake gateway did not start" >&2; exit 1; }

"$switchyard" serve --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 --data-dir "$work/data" \
  --gateway "http://127.0.0.1:$fake_port" --log-level warn --per-model-concurrency "$SLOTS" \
  --global-concurrency "$SLOTS" "${serve_args[@]}" >"$work/engine.log" 2>&1 &
engine=$!
pids+=("$engine")
port=$(wait_ready "$work/data") || { echo "the engine did not become ready" >&2; exit 1; }
nats=$(pgrep -P "$engine" nats-server | head -1 || true)
[[ -n $nats ]] || { echo "no private nats-server under the engine" >&2; exit 1; }
loadgen=("$build/bench/sy_bench_submit" --port "$port" --connections "$CONNS")
if [[ $MODE == e2e ]]; then
  # Warm up against the fake itself, then reset its counters for the measured run's check.
  "${loadgen[@]}" --requests 2000 --e2e-fake "$fake_port" >/dev/null
  curl -sf -XPOST "http://127.0.0.1:$fake_port/_fake/control" -d '{"reset":true}' >/dev/null
else
  "${loadgen[@]}" --requests 2000 >/dev/null
fi

# What the engine says about itself: commits, and JetStream messages by kind.
scrape() { curl -sf "http://127.0.0.1:$port/metrics"; }
metric() {  # metric FILE NAME_WITH_LABELS: its value, 0 if absent
  awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }' "$1"
}
io_bytes() { awk '/^write_bytes/ {print $2}' "/proc/$1/io"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
ctx() { awk '/ctxt_switches/ { s += $2 } END { print s }' /proc/"$1"/task/*/status; }

scrape >"$work/m0"
e_io0=$(io_bytes "$engine") n_io0=$(io_bytes "$nats")
e_cpu0=$(cpu_ticks "$engine") n_cpu0=$(cpu_ticks "$nats")
e_cs0=$(ctx "$engine") n_cs0=$(ctx "$nats")
perf stat -x, -e raw_syscalls:sys_enter -p "$engine" -o "$work/engine.sys" &
perf_e=$!
perf stat -x, -e raw_syscalls:sys_enter -p "$nats" -o "$work/nats.sys" &
perf_n=$!
pids+=("$perf_e" "$perf_n")
args=(--requests "$N")
[[ $MODE == e2e ]] && args+=(--e2e-fake "$fake_port")
"${loadgen[@]}" "${args[@]}" | tee "$work/loadgen.txt"
kill -INT "$perf_e" "$perf_n"
wait "$perf_e" "$perf_n" 2>/dev/null || true
e_cpu1=$(cpu_ticks "$engine") n_cpu1=$(cpu_ticks "$nats")
e_cs1=$(ctx "$engine") n_cs1=$(ctx "$nats")
e_io1=$(io_bytes "$engine") n_io1=$(io_bytes "$nats")
scrape >"$work/m1"

hz=$(getconf CLK_TCK)
delta() { echo $(($(metric "$work/m1" "$1") - $(metric "$work/m0" "$1"))); }
commits=$(delta switchyard_storage_commit_duration_seconds_count)
tasks=$(delta 'switchyard_outbox_published_total{kind="task"}')
events=$(delta 'switchyard_outbox_published_total{kind="event"}')
others=$(($(delta 'switchyard_outbox_published_total{kind="task_event"}') + \
  $(delta 'switchyard_outbox_published_total{kind="dlq"}')))
syscalls() { awk -F, '/raw_syscalls/ { print $1 + 0 }' "$1"; }
awk -v n="$N" -v hz="$hz" -v ec=$((e_cpu1 - e_cpu0)) -v nc=$((n_cpu1 - n_cpu0)) \
  -v es="$(syscalls "$work/engine.sys")" -v ns="$(syscalls "$work/nats.sys")" \
  -v ex=$((e_cs1 - e_cs0)) -v nx=$((n_cs1 - n_cs0)) -v commits="$commits" \
  -v eio=$((e_io1 - e_io0)) -v nio=$((n_io1 - n_io0)) -v tasks="$tasks" -v events="$events" \
  -v others="$others" -v mode="$MODE" '
  BEGIN {
    c = commits > 0 ? commits : 1
    printf "per job (%s, %d jobs):\n", mode, n
    printf "  engine CPU          %7.1f us     nats-server CPU      %7.1f us\n",
      1e6 * ec / hz / n, 1e6 * nc / hz / n
    printf "  engine syscalls     %7.2f        nats-server syscalls %7.2f\n", es / n, ns / n
    printf "  engine ctx switches %7.2f        nats-server switches %7.2f\n", ex / n, nx / n
    printf "  JetStream messages  %7.2f (tasks %.2f, job events %.2f, other %.2f)\n",
      (tasks + events + others) / n, tasks / n, events / n, others / n
    printf "  LMDB commits        %7.3f (%.1f jobs per commit), engine wrote %.1f KiB per commit" \
      " (%.1f pages of 4 KiB)\n", commits / n, n / c, eio / c / 1024, eio / c / 4096
    printf "  nats-server wrote   %7.0f bytes per job\n", nio / n
    printf "RESULT mode=%s jobs=%d engine_cpu_us=%.1f nats_cpu_us=%.1f engine_syscalls=%.2f" \
      " nats_syscalls=%.2f engine_cs=%.2f nats_cs=%.2f js_msgs=%.2f commits_per_job=%.4f" \
      " pages_per_commit=%.1f nats_bytes_per_job=%.0f\n", mode, n, 1e6 * ec / hz / n,
      1e6 * nc / hz / n, es / n, ns / n, ex / n, nx / n, (tasks + events + others) / n,
      commits / n, eio / c / 4096, nio / n
  }'
