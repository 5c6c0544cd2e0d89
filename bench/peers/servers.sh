# shellcheck shell=bash
# Helpers of bench/peers/run.sh: start and stop the servers it measures, each by its PID, and
# read their CPU time. Sourced; the caller sets $here, $out (logs), $work (data, on disk), the
# array `pids` ("PID:SIGNAL" entries, stopped on exit), $switchyard, CLIENTS, CONCURRENCY and
# PG_BIN; the start_* functions set variables the caller reads (listener_port, redis_port, ...).
# shellcheck disable=SC2154,SC2034

stop_pid() {  # stop_pid PID [SIGNAL]: SIGNAL (TERM), wait up to 15 s, then SIGKILL
  local pid=$1 sig=${2:-TERM}
  kill -"$sig" "$pid" 2>/dev/null || return 0
  for _ in $(seq 150); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  echo "pid $pid did not stop in 15 s; killing it" >&2
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

track() { pids+=("$1:${2:-TERM}"); }  # track PID [SIGNAL]: stop it on exit

stop_tracked() {  # stop_tracked PID: stop it now and forget it
  local keep=() e
  for e in "${pids[@]}"; do
    if [[ ${e%%:*} == "$1" ]]; then stop_pid "$1" "${e#*:}"; else keep+=("$e"); fi
  done
  pids=("${keep[@]}")
}

stop_all() {  # the newest first: workers before their servers
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[i]%%:*}" "${pids[i]#*:}"; done
  pids=()
}

free_port() {  # a port free on 127.0.0.1 right now (the kernel's pick)
  timeout 10 node -e 'const s = require("net").createServer().listen(0, "127.0.0.1",
    () => { console.log(s.address().port); s.close(); })'
}

wait_line() {  # wait_line FILE REGEX SECONDS: prints the first matching line, fails at the deadline
  local line
  for _ in $(seq $(($3 * 20))); do
    line=$(grep -m1 -E "$2" "$1" 2>/dev/null || true)
    [[ -n $line ]] && { echo "$line"; return 0; }
    sleep 0.05
  done
  return 1
}

start_listener() {  # start_listener NAME BINARY ARGS...: for servers printing "listening <port>"
  local name=$1
  shift
  "$@" >"$out/$name.log" 2>&1 &
  listener_pid=$!
  track "$listener_pid"
  listener_port=$(wait_line "$out/$name.log" '^listening' 10 | awk '{print $2}') ||
    { echo "$name did not start; see $out/$name.log" >&2; exit 1; }
}

start_engine() {  # start_engine TAG GATEWAY_PORT: a fresh data dir; sets engine_pid/port, nats_pid
  local tag=$1 dir=$work/sy-$1
  mkdir -p "$dir"
  # A short shutdown timeout: the parked gateway holds requests for 10 minutes, and the default
  # 10 s for them to finish would only slow the benchmark down (it is not part of any measure).
  "$switchyard" serve --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 --data-dir "$dir" \
    --gateway "http://127.0.0.1:$2" --log-level warn --per-model-concurrency "$CONCURRENCY" \
    --global-concurrency "$CONCURRENCY" --shutdown-timeout-ms 500 >"$out/$tag.engine.log" 2>&1 &
  engine_pid=$!
  track "$engine_pid"
  engine_port=""
  for _ in $(seq 300); do
    if [[ -s $dir/listen.addr ]]; then
      engine_port=$(sed 's/.*://' "$dir/listen.addr")
      curl -sf -m 2 "http://127.0.0.1:$engine_port/readyz" >/dev/null && break
      engine_port=""
    fi
    sleep 0.1
  done
  [[ -n $engine_port ]] ||
    { echo "engine did not become ready; see $out/$tag.engine.log" >&2; exit 1; }
  nats_pid=$(pgrep -P "$engine_pid" nats-server | head -1 || true)
  [[ -n $nats_pid ]] || { echo "the engine's nats-server was not found" >&2; exit 1; }
}

stop_engine() {  # stop_engine TAG: stops it and removes its data dir
  stop_tracked "$engine_pid"
  rm -rf "$work/sy-$1"
}

start_redis() {  # start_redis NAME: Redis 7 with every write fsync'd; sets redis_pid, redis_port
  redis_port=$(free_port)
  mkdir -p "$work/redis"
  redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$work/redis" --appendonly yes \
    --appendfsync always --save "" --daemonize no --logfile "" >"$out/$1.log" 2>&1 &
  redis_pid=$!
  track "$redis_pid"
  for _ in $(seq 100); do
    [[ $(timeout 5 redis-cli -p "$redis_port" ping 2>/dev/null) == PONG ]] && return 0
    sleep 0.1
  done
  echo "redis did not start; see $out/$1.log" >&2
  exit 1
}

redis_fresh() {  # empty Redis, and an AOF rewritten to nothing, so every measure starts alike
  timeout 30 redis-cli -p "$redis_port" flushall >/dev/null
  timeout 30 redis-cli -p "$redis_port" bgrewriteaof >/dev/null
  for _ in $(seq 300); do
    timeout 5 redis-cli -p "$redis_port" info persistence |
      grep -qE '^aof_rewrite_(in_progress|scheduled):1' || return 0
    sleep 0.1
  done
  echo "redis: the AOF rewrite did not finish in 30 s" >&2
  exit 1
}

# PostgreSQL refuses to run as root: as root, its programs run as the postgres user. A prefix
# for the command line, not a function: a function run in the background would be a subshell
# whose PID is not the server's.
as_pg=()
((EUID == 0)) && as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups --)

pg_sql() {  # pg_sql DB SQL...
  local db=$1
  shift
  timeout 120 "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$work/pgsock" -p "$pg_port" \
    -U postgres -d "$db" "$@" >/dev/null
}

start_postgres() {  # start_postgres NAME: initdb once, then start; sets pg_pid, pg_port
  if [[ ! -d $work/pg ]]; then
    mkdir -p "$work/pg" "$work/pgsock"
    ((EUID == 0)) && chown postgres: "$work/pg" "$work/pgsock"
    "${as_pg[@]}" timeout 120 "$PG_BIN/initdb" -D "$work/pg" -U postgres --auth=trust -E UTF8 \
      >"$out/initdb.log" 2>&1 || { echo "initdb failed; see $out/initdb.log" >&2; exit 1; }
  fi
  pg_port=$(free_port)
  # The defaults for durability, spelled out; more connections than the default 100 for the
  # client's pool (CLIENTS) and the worker's (CONCURRENCY + 16) together.
  "${as_pg[@]}" "$PG_BIN/postgres" -D "$work/pg" -p "$pg_port" -k "$work/pgsock" \
    -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on \
    -c max_connections=$((CLIENTS + CONCURRENCY + 50)) >"$out/$1.log" 2>&1 &
  pg_pid=$!
  track "$pg_pid" INT  # SIGINT: PostgreSQL's fast shutdown
  for _ in $(seq 300); do
    timeout 5 "$PG_BIN/pg_isready" -q -h "$work/pgsock" -p "$pg_port" && return 0
    sleep 0.1
  done
  echo "postgres did not start; see $out/$1.log" >&2
  exit 1
}

start_worker() {  # start_worker NAME SCRIPT ARGS...: a Node worker; waits for "ready"
  local name=$1 script=$2
  shift 2
  # Run from the data dir: graphile-worker looks for a crontab file in its working directory.
  (cd "$work" && exec node "$here/$script" "$@") >"$out/$name.log" 2>&1 &
  worker_pid=$!
  track "$worker_pid"
  wait_line "$out/$name.log" '^ready' 60 >/dev/null ||
    { echo "worker $name did not start; see $out/$name.log" >&2; exit 1; }
}

# CPU clock ticks (user + system, and those of reaped children) of PID; with "tree", plus those of
# its live children: PostgreSQL's backends and helpers are children of the postmaster, and a
# backend that exits during a measure is counted in the postmaster's reaped-children time.
ticks() {
  local files=("/proc/$1/stat") kids=() c
  if [[ ${2:-} == tree ]]; then
    read -r -a kids < <(cat /proc/"$1"/task/*/children 2>/dev/null; echo)
    for c in "${kids[@]}"; do files+=("/proc/$c/stat"); done
  fi
  # cat skips a child that exited since it was listed (its time is then in the parent's).
  cat "${files[@]}" 2>/dev/null |
    awk '{ sub(/^.*\) /, ""); split($0, v, " "); t += v[12] + v[13] + v[14] + v[15] }
         END { print t + 0 }'
}

machine_busy() {  # busy clock ticks of all cores together
  awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}

self_children_ticks() {  # CPU of this shell's waited-for children (the load generators)
  awk '{ sub(/^.*\) /, ""); split($0, v, " "); print v[14] + v[15] }' /proc/$$/stat
}
