#!/usr/bin/env bash
# What one request costs a lab CMS: sends it N times, one after the other, and divides the CPU its
# gunicorn processes spent (and, on PostgreSQL, the time its sessions spent executing statements).
#   lab/request-cost.sh NAME PORT N PATH_AND_QUERY
# e.g. lab/request-cost.sh w7pg 8701 40 '/api/v2/pages/?fields=-html_url&limit=20'
set -euo pipefail
name="${1:?usage: lab/request-cost.sh NAME PORT N PATH_AND_QUERY}" port="${2:?}" n="${3:?}" query="${4:?}"
state="${LAB_DIR:-/work/lab-build}/state/$name"
ticks_per_s="$(getconf CLK_TCK)"
gunicorn_ticks() {
  local master total=0 pid
  master="$(cat "$state/gunicorn.pid")"
  for pid in "$master" $(pgrep -P "$master"); do
    total=$(( total + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }') ))
  done
  echo "$total"
}
postgres_ms() {
  psql -h 127.0.0.1 -U postgres -d postgres -Atc "select coalesce(sum(active_time), 0) from pg_stat_database where datname = 'cms_lab_$name'" 2>/dev/null || echo 0
}
t0=$(gunicorn_ticks); p0=$(postgres_ms)
for _ in $(seq "$n"); do curl -fsS -o /dev/null "http://127.0.0.1:$port$query"; done
t1=$(gunicorn_ticks); p1=$(postgres_ms)
awk -v t=$((t1 - t0)) -v hz="$ticks_per_s" -v n="$n" -v p0="$p0" -v p1="$p1" -v q="$query" \
  'BEGIN { printf "%6.1f ms gunicorn CPU + %5.1f ms postgres per request: %s\n", t * 1000 / hz / n, (p1 - p0) / n, q }'
