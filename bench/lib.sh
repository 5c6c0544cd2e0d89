# Helpers sourced by the bench scripts.

# wait_ready DATA_DIR: waits up to 30 s for the engine that writes DATA_DIR/listen.addr to answer
# /readyz, then prints its port; fails if it does not.
wait_ready() {
  local dir=$1 port
  for _ in $(seq 300); do
    if [[ -s $dir/listen.addr ]]; then
      port=$(sed 's/.*://' "$dir/listen.addr")
      if curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; then
        echo "$port"
        return 0
      fi
    fi
    sleep 0.1
  done
  return 1
}
