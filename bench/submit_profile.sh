#!/usr/bin/env bash
# One submission phase with per-thread CPU and context switches, for comparing two binaries
# quickly (docs/benchmarks.md, "Latest results").
#
#   bench/submit_profile.sh [BUILD_DIR]   (default BUILD_DIR: build next to this folder)
#
# Environment: SWITCHYARD (the binary to measure; default BUILD_DIR/switchyard), CONNS (64),
# N (30000), MODE (parked: the gateway holds every request, so only submissions cost CPU;
# e2e: a fast fake, and the run lasts until every job completed), SLOTS (per-model and
# global concurrency, 100), RAW_TARGET (POST to this route instead of submitting, e.g.
# /healthz: the HTTP server's own cost per request), PERF_OUT (a file: `perf record` of the
# engine and its nats-server during the measured run; PERF_CALLGRAPH=dwarf for binaries built
# without frame pointers). Prints the load generator's result and, per thread of the engine and
# of its nats-server that did noticeable work, context switches (voluntary + involuntary) per
# request and CPU clock ticks. Every process it starts is stopped on exit.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
build=$(cd "${1:-$here/../build}" && pwd)
switchyard=${SWITCHYARD:-$build/switchyard}
CONNS=${CONNS:-64}
N=${N:-30000}
MODE=${MODE:-parked}
SLOTS=${SLOTS:-100}
work=$(mktemp -d "$build/submit-profile.XXXXXX")
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
until fake_port=$(awk '/^listening/ {print $2}' "$work/fake.out") && [[ -n $fake_port ]]; do sleep 0.05; done

"$switchyard" serve --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 --data-dir "$work/data" \
  --gateway "http://127.0.0.1:$fake_port" --log-level warn \
  --per-model-concurrency "$SLOTS" --global-concurrency "$SLOTS" >"$work/engine.log" 2>&1 &
engine=$!
pids+=("$engine")
port=$(wait_ready "$work/data") || {
  echo "the engine did not become ready; see $work/engine.log" >&2
  exit 1
}
nats=$(pgrep -P "$engine" nats-server | head -1 || true)
loadgen=("$build/bench/sy_bench_submit" --port "$port" --connections "$CONNS")
"${loadgen[@]}" --requests 2000 >/dev/null  # warm up (model dispatcher, connections, pages)

thread_snapshot "$engine" $nats >"$work/before"
args=(--requests "$N")
[[ $MODE == e2e ]] && args+=(--e2e-fake "$fake_port")
# RAW_TARGET: the same connections POST to another route (its answers are not checked), e.g.
# /healthz: what the HTTP server itself costs per request, without a submission's work.
[[ -z ${RAW_TARGET:-} ]] || args+=(--raw --target "$RAW_TARGET")
m0=$(awk '/^cpu / {print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat)
perf_pid=""
if [[ -n ${PERF_OUT:-} ]]; then  # a call-graph profile of the engine and its nats-server
  graph=(-g)
  [[ -z ${PERF_CALLGRAPH:-} ]] || graph=(--call-graph "$PERF_CALLGRAPH")
  perf record -q "${graph[@]}" -F 499 -o "$PERF_OUT" -p "$engine${nats:+,$nats}" >/dev/null 2>&1 &
  perf_pid=$!
fi
/usr/bin/time -f "  load generator: %U s user %S s system" "${loadgen[@]}" "${args[@]}" || [[ -n ${RAW_TARGET:-} ]]
[[ -z $perf_pid ]] || { kill -INT "$perf_pid"; wait "$perf_pid" || true; }
m1=$(awk '/^cpu / {print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat)
read -r b0 i0 <<<"$m0"; read -r b1 i1 <<<"$m1"
echo "  machine busy: $(( 200 * (b1 - b0) / (b1 - b0 + i1 - i0 + 1) ))% of 200%"
thread_snapshot "$engine" $nats >"$work/after"
thread_report "$work/before" "$work/after" "$N"
