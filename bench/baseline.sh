#!/usr/bin/env bash
# The machine's own figures, to set beside the engine's (docs/benchmarks.md, "The machine"):
# one fsync'd LMDB transaction, group-committed LMDB puts, JetStream async publish, JetStream
# pull + ack — the building blocks issue 2 states its reference figures for.
#
#   bench/baseline.sh [BUILD_DIR]      (default BUILD_DIR: build-bench next to this folder)
#
# Starts a private `nats-server -js` on a free loopback port with its store, and the LMDB files,
# in a temporary directory on the build dir's filesystem (not tmpfs, so fsync is real); stops it
# and removes the directory on exit.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build-bench}" && pwd)
baseline=$build/bench/sy_bench_baseline
if [[ ! -x $baseline ]]; then
  echo "missing $baseline (build it first, see bench/README.md)" >&2
  exit 2
fi
command -v nats-server >/dev/null || { echo "needs nats-server (scripts/setup)" >&2; exit 2; }

work=$(mktemp -d "$build/baseline.XXXXXX")
nats_pid=""
cleanup() {
  if [[ -n $nats_pid ]]; then
    kill "$nats_pid" 2>/dev/null || true
    wait "$nats_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/lmdb" "$work/nats"
nats-server -js -a 127.0.0.1 -p -1 -sd "$work/nats" --ports_file_dir "$work/nats" \
  >"$work/nats.log" 2>&1 &
nats_pid=$!
port=""
for _ in $(seq 200); do
  f=$(ls "$work"/nats/*.ports 2>/dev/null | head -1 || true)
  if [[ -n $f ]]; then
    port=$(sed -n 's/.*"nats":\["nats:\/\/[^:]*:\([0-9]*\)".*/\1/p' "$f")
    [[ -n $port ]] && break
  fi
  sleep 0.05
done
if [[ -z $port ]]; then
  echo "nats-server did not start:" >&2
  cat "$work/nats.log" >&2
  exit 1
fi
"$baseline" --dir "$work/lmdb" --nats "nats://127.0.0.1:$port"
