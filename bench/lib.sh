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

# thread_snapshot PID...: one "pid-tid name context_switches cpu_ticks" line per thread, sorted
# (for thread_report). One awk for every file: a process per thread would take long enough, and
# enough CPU, to disturb what is measured.
thread_snapshot() {
  local p files=()
  for p in "$@"; do files+=(/proc/"$p"/task/*/stat /proc/"$p"/task/*/status); done
  awk '
    { split(FILENAME, f, "/"); id = f[3] "-" f[5] }
    FILENAME ~ /stat$/ && FNR == 1 {
      name = $0; sub(/^[^(]*\(/, "", name); sub(/\).*$/, "", name); gsub(/ /, "_", name)
      rest = $0; sub(/^.*\) /, "", rest); split(rest, v, " ")
      names[id] = name; ticks[id] = v[12] + v[13]
    }
    /ctxt_switches/ { cs[id] += $2 }
    END { for (id in names) print id, names[id], cs[id] + 0, ticks[id] }
  ' "${files[@]}" 2>/dev/null | sort
}

# thread_report BEFORE AFTER N: each thread's context switches and CPU per unit of work between
# two thread_snapshot files (threads started in between count from zero); quiet threads left out.
thread_report() {
  local hz
  hz=$(getconf CLK_TCK)
  join -a 2 -e 0 -o 2.1,2.2,1.3,2.3,1.4,2.4 "$1" "$2" |
    awk -v n="$3" -v hz="$hz" '{ cs = $4 - $3; ticks = $6 - $5; total += cs
      if (cs > n / 100 || ticks > 5)
        printf "    %-14s %-16s %5.2f switches/request %5d ticks %6.1f us/request\n", $1, $2, cs / n,
          ticks, 1e6 * ticks / hz / n }
      END { printf "    all threads: %.2f context switches/request\n", total / n }'
}
