#!/usr/bin/env bash
# Runs `npm run verify` against one lab instance, for each of its Sites, through a cms-shield
# started here (from the checkout's sources) with the lab's layout.
#   lab/verify.sh CMS_PORT [SHIELD_PORT] [REQUESTS] [SEED]
# Reports go to $LAB_DIR/verify/<CMS_PORT>-<site>-<seed>.json; the last line of each run is
# `verify: X/Y identical`.
set -euo pipefail
cms_port="${1:?usage: lab/verify.sh CMS_PORT [SHIELD_PORT] [REQUESTS] [SEED]}"
shield_port="${2:-$((cms_port + 100))}"
requests="${3:-1000}"
seed="${4:-1}"
out="${LAB_DIR:-/work/lab-build}/verify"
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"

. "$here/lab/shield.sh"
start_shield "$cms_port" "$shield_port" "$out/shield-$shield_port.log" LOG_LEVEL=warn "${VERIFIER_BUDGETS[@]}"

for site in localhost partner.localhost; do
  report="$out/$cms_port-$site-$seed.json"
  (cd "$here" && npm run --silent verify -- --cms "http://127.0.0.1:$cms_port" --shield "http://127.0.0.1:$shield_port" \
    --api-path /api/v2/ --endpoints images,documents --host "$site:$cms_port" \
    --requests "$requests" --seed "$seed" --rate 10 --out "$report" 2>/dev/null | tail -n 1) | sed "s/^/$site: /"
done
