#!/usr/bin/env bash
# What cms-shield's own sync costs a lab CMS: starts a shield (from the checkout's sources, the
# lab's layout) with no client traffic, waits until it is ready and its first syncs are over, then
# reads the CPU time the CMS's gunicorn processes spent over a window (and, for a postgres
# instance, the time PostgreSQL's sessions spent executing statements), and the requests its access log gained.
#   lab/sync-cost.sh NAME CMS_PORT [SECONDS] [SHIELD_PORT] [VAR=VALUE ...]
# e.g. lab/sync-cost.sh w7pg 8701 120 8801 SYNC_INTERVAL=5s
# Extra VAR=VALUE arguments go to the shield's environment (SYNC_INTERVAL defaults to 5s here).
# The last line: `<name>: <cpu> s of CMS CPU per minute (gunicorn <g> s, postgres <p> s active), <n> requests per minute`.
set -euo pipefail
name="${1:?usage: lab/sync-cost.sh NAME CMS_PORT [SECONDS] [SHIELD_PORT] [VAR=VALUE ...]}"
cms_port="${2:?CMS_PORT}"
seconds="${3:-120}"
shield_port="${4:-$((cms_port + 100))}"
shift $(( $# < 4 ? $# : 4 ))
lab="${LAB_DIR:-/work/lab-build}"
state="$lab/state/$name"
here="$(cd "$(dirname "$0")/.." && pwd)"
ticks="$(getconf CLK_TCK)"

# CPU ticks (user + system) of a process and its children, living ones only.
tree_ticks() {
  local total=0 pid
  for pid in "$@"; do
    [ -r "/proc/$pid/stat" ] || continue
    # Fields 14 and 15 after the command name, which may hold spaces: cut at the last ')'.
    total=$(( total + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }') ))
  done
  echo "$total"
}
gunicorn_pids() { local master; master="$(cat "$state/gunicorn.pid")"; echo "$master $(pgrep -P "$master" | tr '\n' ' ')"; }
# Django opens a connection per request here: its backends come and go, so PostgreSQL's own
# account of the time its sessions spent executing statements is read instead (milliseconds).
postgres_ms() {
  psql -h 127.0.0.1 -U postgres -d postgres -Atc "select coalesce(sum(active_time), 0)::bigint from pg_stat_database where datname = 'cms_lab_$name'" 2>/dev/null || echo 0
}

log="$lab/sync-cost-$name-$shield_port.log"
. "$here/lab/shield.sh"
start_shield "$cms_port" "$shield_port" "$log" LOG_LEVEL=info SYNC_INTERVAL=5s "$@"
# The first (full) syncs of every Site are not the steady cost being measured.
sleep 15

g0=$(tree_ticks $(gunicorn_pids)); p0=$(postgres_ms); r0=$(wc -l < "$state/access.log")
sleep "$seconds"
g1=$(tree_ticks $(gunicorn_pids)); p1=$(postgres_ms); r1=$(wc -l < "$state/access.log")
awk -v n="$name" -v g=$((g1 - g0)) -v p=$((p1 - p0)) -v r=$((r1 - r0)) -v t="$ticks" -v s="$seconds" 'BEGIN {
  m = 60 / s
  printf "%s: %.2f s of CMS CPU per minute (gunicorn %.2f s, postgres %.2f s active), %.1f requests per minute\n", n, g / t * m + p / 1000 * m, g / t * m, p / 1000 * m, r * m
}'
