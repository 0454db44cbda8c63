# Sourced by the lab scripts: a cms-shield started from the checkout's sources with the lab's
# layout (the API at /api/v2/ with images and documents, the partner Site beside the default one).
lab_checkout="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Budgets wide enough that the verifier is never refused by the shield (docs/operations.md): a lab
# CMS on a busy machine answers slowly, which the adaptive budget would read as a CMS in trouble.
VERIFIER_BUDGETS=(READ_THROUGH_RATE=50 READ_THROUGH_BURST=100 READ_THROUGH_CLIENT_RATE=50 READ_THROUGH_CLIENT_BURST=100
  READ_THROUGH_ADAPTIVE=false READ_THROUGH_QUEUE_TIMEOUT=30s)

# start_shield CMS_PORT SHIELD_PORT LOG [VAR=VALUE ...]: starts it in the background (stopped when
# the script exits; its pid in $shield) and waits until its /readyz answers 200, two minutes at most.
start_shield() {
  local cms_port="$1" shield_port="$2" log="$3"
  shift 3
  env -i PATH="$PATH" HOME="${HOME:-/root}" \
    UPSTREAM_URL="http://127.0.0.1:$cms_port" BASE_URL="http://127.0.0.1:$shield_port" PORT="$shield_port" HOST=127.0.0.1 \
    API_PATH=/api/v2/ API_ENDPOINTS=images,documents SITES=partner.localhost "$@" \
    "$lab_checkout/node_modules/.bin/tsx" "$lab_checkout/src/main.ts" >"$log" 2>&1 &
  shield=$!
  trap 'kill "$shield" 2>/dev/null || true' EXIT
  for _ in $(seq 1 120); do
    curl -fsS "http://127.0.0.1:$shield_port/readyz" >/dev/null 2>&1 && return 0
    sleep 1
  done
  echo "the shield did not get ready; see $log" >&2
  exit 1
}
