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

# Budgets wide enough that the verifier is never refused by the shield (docs/operations.md): a lab
# CMS on a busy machine answers slowly, which the adaptive budget would read as a CMS in trouble.
env -i PATH="$PATH" HOME="${HOME:-/root}" \
  UPSTREAM_URL="http://127.0.0.1:$cms_port" BASE_URL="http://127.0.0.1:$shield_port" PORT="$shield_port" HOST=127.0.0.1 \
  API_PATH=/api/v2/ API_ENDPOINTS=images,documents SITES=partner.localhost LOG_LEVEL=warn \
  READ_THROUGH_RATE=50 READ_THROUGH_BURST=100 READ_THROUGH_CLIENT_RATE=50 READ_THROUGH_CLIENT_BURST=100 \
  READ_THROUGH_ADAPTIVE=false READ_THROUGH_QUEUE_TIMEOUT=30s \
  "$here/node_modules/.bin/tsx" "$here/src/main.ts" >"$out/shield-$shield_port.log" 2>&1 &
shield=$!
trap 'kill "$shield" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$shield_port/readyz" >/dev/null 2>&1 && break
  sleep 1
done
curl -fsS "http://127.0.0.1:$shield_port/readyz" >/dev/null || { echo "the shield did not get ready; see $out/shield-$shield_port.log" >&2; exit 1; }

for site in localhost partner.localhost; do
  report="$out/$cms_port-$site-$seed.json"
  (cd "$here" && npm run --silent verify -- --cms "http://127.0.0.1:$cms_port" --shield "http://127.0.0.1:$shield_port" \
    --api-path /api/v2/ --endpoints images,documents --host "$site:$cms_port" \
    --requests "$requests" --seed "$seed" --rate 10 --out "$report" 2>/dev/null | tail -n 1) | sed "s/^/$site: /"
done
