#!/usr/bin/env bash
# Peer benchmark: Switchyard beside BullMQ (on Redis) and graphile-worker (on PostgreSQL), the
# same jobs sent the same way on the same machine, and a bare HTTP server as the machine's limit
# (README.md beside this file says what each row measures and where a comparison favours whom).
#
#   bench/peers/run.sh [BUILD_DIR]            (default: the build/ folder of this repository)
#
# Needs BUILD_DIR/switchyard, BUILD_DIR/tests/fakes/fake_gateway, BUILD_DIR/bench/sy_bench_submit
# and BUILD_DIR/bench/sy_bench_bare; installs what else is missing (Debian's redis-server and
# postgresql, the pinned npm packages of package-lock.json).
# Environment: N (20000 jobs per measure), CLIENTS (64 concurrent submitters), CONCURRENCY (64
# jobs in flight when executing), ROUNDS (3), SYSTEMS (of "switchyard bullmq graphile bare"),
# WORKLOADS (of "enqueue e2e bulk"; bulk is BullMQ's addBulk alone), BULK (100 jobs per addBulk),
# SWITCHYARD (the engine binary; default BUILD_DIR/switchyard), PG_BIN (PostgreSQL's programs).
# Each round runs every (system, client, workload) once, the systems in an order rotated per
# round. Results: BUILD_DIR/bench-results/peers-<UTC timestamp>/ (results.tsv with every number,
# table.txt, each server's and client's output). Every process started here is stopped by its PID.
#
# Variables that servers.sh's functions set (engine_port, listener_pid, ...) are read here, and
# servers.sh reads `pids`:
# shellcheck disable=SC2154,SC2034
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/peers/servers.sh
source "$here/servers.sh"
build=$(cd "${1:-$here/../../build}" && pwd)
N=${N:-20000}
CLIENTS=${CLIENTS:-64}
CONCURRENCY=${CONCURRENCY:-64}
ROUNDS=${ROUNDS:-3}
SYSTEMS=${SYSTEMS:-switchyard bullmq graphile bare}
WORKLOADS=${WORKLOADS:-enqueue e2e bulk}
BULK=${BULK:-100}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
switchyard=${SWITCHYARD:-$build/switchyard}
fake=$build/tests/fakes/fake_gateway
loadgen=$build/bench/sy_bench_submit
bare=$build/bench/sy_bench_bare
# A bound for one measure: graphile-worker, the slowest, runs about 200 jobs/s on a 2-core VM.
PHASE_TIMEOUT=$((120 + N / 40))
wants() { [[ " $WORKLOADS " == *" $1 "* ]]; }
for w in $WORKLOADS; do
  [[ $w == enqueue || $w == e2e || $w == bulk ]] ||
    { echo "unknown workload $w (of: enqueue e2e bulk)" >&2; exit 2; }
done

for bin in "$switchyard" "$fake" "$loadgen" "$bare"; do
  [[ -x $bin ]] || {
    echo "missing $bin: build it first, e.g. cmake --build $build --target" \
      "switchyard fake_gateway sy_bench_submit sy_bench_bare (see bench/README.md)" >&2
    exit 2
  }
done

install_missing() {
  local apt=()
  command -v redis-server >/dev/null || apt+=(redis-server)
  [[ -x $PG_BIN/postgres ]] || apt+=(postgresql)
  if ((${#apt[@]})); then
    echo "== installing ${apt[*]} (apt)"
    local sudo=()
    ((EUID == 0)) || sudo=(sudo -n)
    # RUNLEVEL=1: the packages' scripts must not start system-wide servers of their own.
    timeout 600 "${sudo[@]}" apt-get update -qq
    timeout 900 "${sudo[@]}" env RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq "${apt[@]}" >/dev/null
  fi
  if [[ ! -f $here/node_modules/.package-lock.json ||
    $here/package-lock.json -nt $here/node_modules/.package-lock.json ]]; then
    echo "== installing the pinned npm packages (npm ci)"
    (cd "$here" && timeout 900 npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
  fi
}
install_missing

out=$build/bench-results/peers-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
work=$(mktemp -d "$build/peers-data.XXXXXX")
chmod 755 "$work"  # PostgreSQL runs as its own user when this script runs as root
tsv=$out/results.tsv
printf 'round\tsystem\tclient\tworkload\tmetric\tvalue\n' >"$tsv"
pids=()
cleanup() {
  stop_all
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

hz=$(getconf CLK_TCK)
result_field() {  # result_field FILE KEY: a value of the RESULT line
  sed -n 's/^RESULT //p' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
reset_fake() {
  curl -sf -m 5 -XPOST "http://127.0.0.1:$fast_port/_fake/control" -d '{"reset":true}' >/dev/null
}
per_job() {  # per_job TICKS: microseconds of CPU per job
  awk -v d="$1" -v hz="$hz" -v n="$N" 'BEGIN { printf "%.1f", 1e6 * d / hz / n }'
}
pct() {  # pct TICKS SECONDS: % of one core
  awk -v d="$1" -v hz="$hz" -v w="$2" 'BEGIN { v = 100 * d / hz / w; printf "%.1f", v < 0 ? 0 : v }'
}

# One measure: runs COMMAND (a load generator) under a timeout while reading the CPU time of every
# process in the array `procs` ("label:pid[:tree]"; the label "fake" is not server side), then
# `record`s it. Sets m_wall, m_rc, m_client and m_machine (ticks), m_ticks (label: ticks).
#   measure ROUND SYSTEM CLIENT WORKLOAD -- COMMAND...
measure() {
  local round=$1 sys=$2 client=$3 wl=$4
  shift 5
  local -A before=()
  local p label pid mode w0 w1 busy0 self0 client_pid
  for p in "${procs[@]}"; do
    IFS=: read -r label pid mode <<<"$p"
    before[$label]=$(ticks "$pid" "$mode")
  done
  busy0=$(machine_busy)
  w0=$(date +%s.%N)
  self0=$(self_children_ticks)
  # In the background and waited for, so that a signal to this script stops it at once (bash
  # runs a trap only once a foreground command has finished); its CPU still counts as this
  # shell's reaped children's.
  timeout "$PHASE_TIMEOUT" "$@" >"$out/r$round-$sys-$client-$wl.txt" \
    2>"$out/r$round-$sys-$client-$wl.err" &
  client_pid=$!
  track "$client_pid"
  m_rc=0
  wait "$client_pid" || m_rc=$?
  m_client=$(($(self_children_ticks) - self0))
  stop_tracked "$client_pid"  # gone already: only forgets it
  w1=$(date +%s.%N)
  m_machine=$(($(machine_busy) - busy0))
  m_wall=$(awk -v a="$w0" -v b="$w1" 'BEGIN { print b - a }')
  declare -gA m_ticks=()
  for p in "${procs[@]}"; do
    IFS=: read -r label pid mode <<<"$p"
    m_ticks[$label]=$(($(ticks "$pid" "$mode") - before[$label]))
  done
  record "$round" "$sys" "$client" "$wl"
}

# Appends a measure's numbers to results.tsv and prints its line. The function named by $check
# (if set) prints how many jobs are missing from the system after the measure.
record() {
  local round=$1 sys=$2 client=$3 wl=$4 tag="r$1-$2-$3-$4"
  emit() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$sys" "$client" "$wl" "$1" "$2" >>"$tsv"; }
  local f=$out/$tag.txt label server_us="" server=0 known=0 k
  for label in "${procs[@]%%:*}"; do
    known=$((known + m_ticks[$label]))
    emit "cpu_us_per_job.$label" "$(per_job "${m_ticks[$label]}")"
    emit "cpu_pct.$label" "$(pct "${m_ticks[$label]}" "$m_wall")"
    [[ $label == fake ]] && continue
    server=$((server + m_ticks[$label]))
    server_us+=" $label $(per_job "${m_ticks[$label]}")"
  done
  local bad missing=0 driver_missing valid=1 rate client_pct
  [[ -n ${check:-} ]] && missing=$("$check" "$tag")
  bad=$(result_field "$f" bad)
  if [[ -z $bad ]]; then
    bad=$N valid=0
    echo "  $tag: no RESULT line (exit $m_rc); see $out/$tag.err" >&2
  fi
  driver_missing=$(result_field "$f" missing)  # already in the driver's bad
  bad=$((bad + missing))
  missing=$((missing + ${driver_missing:-0}))
  ((bad == 0)) || valid=0
  rate=$(result_field "$f" rate)
  [[ $wl == e2e ]] && rate=$(result_field "$f" e2e_jobs_per_s)
  # A Node driver measures its own CPU over its timed loop; the C++ one runs too briefly for its
  # start to matter, so the shell's measure of its whole life is used.
  client_pct=$(result_field "$f" cpu_pct)
  [[ -n $client_pct ]] || client_pct=$(pct "$m_client" "$m_wall")
  emit jobs_per_s "${rate:-0}"
  emit submit_rate "$(result_field "$f" rate)"
  for k in p50 p99 p999 max; do emit "${k}_ms" "$(result_field "$f" "$k")"; done
  for k in e2e_s fake_all_s secs; do
    [[ -n $(result_field "$f" "$k") ]] && emit "$k" "$(result_field "$f" "$k")"
  done
  [[ $wl == bulk ]] && emit bulk_size "$BULK"
  emit bad "$bad"
  emit missing "$missing"
  emit valid "$valid"
  emit exit_code "$m_rc"
  emit client_cpu_pct "$client_pct"
  emit client_cpu_life_pct "$(pct "$m_client" "$m_wall")"
  emit wall_s "$m_wall"
  emit cpu_us_per_job.server "$(per_job "$server")"
  emit machine_cpu_pct "$(pct "$m_machine" "$m_wall")"
  # What ran besides the measured processes and the client (another build, say): to be ~0.
  emit other_cpu_pct "$(pct $((m_machine - known - m_client)) "$m_wall")"
  printf '  %-32s %6s jobs/s  p50 %7s ms  p99 %8s ms  server CPU us/job:%s  client CPU %s%%' \
    "$tag" "${rate:-?}" "$(result_field "$f" p50)" "$(result_field "$f" p99)" "$server_us" \
    "$client_pct"
  echo "  bad $bad"
  if awk -v c="$client_pct" 'BEGIN { exit !(c > 90) }'; then
    echo "  warning: the client used ${client_pct}% of a core: the client, not the server," \
      "may be the limit"
  fi
}

# --- the systems; each function runs its measures of one round -----------------------------

sy_check() {  # jobs missing from Switchyard: not answered 202 (enqueue), not completed (e2e)
  local ids=$work/$1.ids
  if [[ $1 == *-e2e ]]; then
    timeout 300 "$loadgen" --port "$engine_port" --verify "$ids" >"$out/$1.verify" 2>&1 || true
    local completed
    completed=$(result_field "$out/$1.verify" completed)
    echo $((N - ${completed:-0}))
  else
    echo $((N - $(wc -l <"$ids")))
  fi
}

run_switchyard() {
  local round=$1 wl client tag gw args
  for wl in enqueue e2e; do
    wants "$wl" || continue
    for client in cpp node; do
      tag=r$round-switchyard-$client-$wl
      reset_fake
      # Enqueue alone: the gateway holds every request for 10 minutes, so the engine only accepts
      # jobs (as BullMQ and graphile-worker do with no worker running); 64 sit at the gateway.
      gw=$slow_port
      [[ $wl == e2e ]] && gw=$fast_port
      start_engine "$tag" "$gw"
      procs=("engine:$engine_pid" "nats:$nats_pid")
      args=(--port "$engine_port" --connections "$CLIENTS" --requests "$N")
      args+=(--ids-out "$work/$tag.ids")
      [[ $wl == e2e ]] && { args+=(--e2e-fake "$fast_port"); procs+=("fake:$fast_pid"); }
      check=sy_check
      if [[ $client == cpp ]]; then
        measure "$round" switchyard cpp "$wl" -- "$loadgen" "${args[@]}"
      else
        measure "$round" switchyard node "$wl" -- node "$here/switchyard.mjs" "${args[@]}"
      fi
      check=""
      stop_engine "$tag"
      rm -f "$work/$tag.ids"
    done
  done
}

run_bare() {
  local round=$1
  wants enqueue || return 0
  start_listener "r$round-bare" "$bare" --port 0 --threads 2
  local bare_pid=$listener_pid bare_port=$listener_port
  procs=("bare:$bare_pid")
  measure "$round" bare cpp enqueue -- "$loadgen" --port "$bare_port" --connections "$CLIENTS" \
    --requests "$N"
  measure "$round" bare node enqueue -- node "$here/switchyard.mjs" --port "$bare_port" \
    --connections "$CLIENTS" --requests "$N"
  stop_tracked "$bare_pid"
}

run_bullmq() {
  local round=$1 wl tag
  start_redis "r$round-redis"
  for wl in enqueue bulk e2e; do
    wants "$wl" || continue
    tag=r$round-bullmq-node-$wl
    redis_fresh
    procs=("redis:$redis_pid")
    if [[ $wl == e2e ]]; then
      reset_fake
      start_worker "$tag.worker" bullmq_worker.mjs --redis-port "$redis_port" --queue bench \
        --fake-port "$fast_port" --concurrency "$CONCURRENCY"
      procs+=("worker:$worker_pid" "fake:$fast_pid")
    fi
    measure "$round" bullmq node "$wl" -- node "$here/bullmq.mjs" --redis-port "$redis_port" \
      --queue bench --mode "$wl" --requests "$N" --connections "$CLIENTS" --bulk-size "$BULK" \
      --e2e-fake "$fast_port"
    [[ $wl == e2e ]] && stop_tracked "$worker_pid"
  done
  stop_tracked "$redis_pid"
}

run_graphile() {
  local round=$1 wl tag db url
  start_postgres "r$round-postgres"
  for wl in enqueue e2e; do
    wants "$wl" || continue
    tag=r$round-graphile-node-$wl
    db=bench_r${round}_$wl
    url=postgres://postgres@127.0.0.1:$pg_port/$db
    pg_sql postgres -c "create database $db"
    procs=("postgres:$pg_pid:tree")
    if [[ $wl == e2e ]]; then
      reset_fake
      pg_sql "$db" -c 'create table bench_results (job_id bigint primary key, result json not null)'
      # The runner migrates graphile-worker's schema before it prints "ready".
      start_worker "$tag.worker" graphile_worker.mjs --pg "$url" --fake-port "$fast_port" \
        --concurrency "$CONCURRENCY"
      procs+=("worker:$worker_pid" "fake:$fast_pid")
    else
      # The schema, before the measure: not part of what is measured.
      (cd "$work" && timeout 120 node "$here/graphile.mjs" --pg "$url" --mode migrate) \
        >"$out/$tag.migrate.log" 2>&1
    fi
    measure "$round" graphile node "$wl" -- node "$here/graphile.mjs" --pg "$url" --mode "$wl" \
      --requests "$N" --connections "$CLIENTS" --e2e-fake "$fast_port"
    [[ $wl == e2e ]] && stop_tracked "$worker_pid"
    pg_sql postgres -c "drop database $db"
  done
  stop_tracked "$pg_pid"
}

# --- the rounds ---------------------------------------------------------------------------------

echo "== machine: $(nproc) cores, $(uname -r); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== N=$N CLIENTS=$CLIENTS CONCURRENCY=$CONCURRENCY ROUNDS=$ROUNDS SYSTEMS=\"$SYSTEMS\"" \
  "WORKLOADS=\"$WORKLOADS\"; results and logs: $out"
npm_versions() {  # the pinned packages as installed
  # shellcheck disable=SC2016 # JavaScript, not shell
  (cd "$here" && timeout 30 node -e 'const l = require("./package-lock.json").packages;
    console.log(Object.keys(require("./package.json").dependencies)
      .map((d) => `${d}@${l["node_modules/" + d].version}`).join(" "))')
}
echo "== versions: node $(node --version), redis $(redis-server --version | awk '{print $3}')," \
  "postgres $("$PG_BIN/postgres" --version | awk '{print $3}'), $(npm_versions)" |
  tee "$out/versions.txt"

start_listener fake-fast "$fake" --port 0 --threads 1
fast_pid=$listener_pid fast_port=$listener_port
start_listener fake-parked "$fake" --port 0 --threads 1 --latency-ms 600000
slow_port=$listener_port

read -r -a systems <<<"$SYSTEMS"
for ((round = 1; round <= ROUNDS; round++)); do
  k=$(((round - 1) % ${#systems[@]}))
  order=("${systems[@]:k}" "${systems[@]:0:k}")
  echo "== round $round of $ROUNDS: ${order[*]}"
  for sys in "${order[@]}"; do
    case $sys in
      switchyard | bullmq | graphile | bare) "run_$sys" "$round" ;;
      *) echo "unknown system $sys (of: switchyard bullmq graphile bare)" >&2; exit 2 ;;
    esac
  done
done

echo
timeout 60 node "$here/report.mjs" "$tsv" | tee "$out/table.txt"
echo "== every number: $tsv"
