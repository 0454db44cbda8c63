#!/usr/bin/env bash
# The editor scenario against a freshly seeded lab instance, checked by the differential test:
# re-seeds NAME, starts a shield (from the checkout's sources, the lab's layout, SYNC_INTERVAL=5s
# unless given), runs `npm run verify` for each Site, runs the editor scenario (`manage.py
# edit_lab`: retitle, move, slug change of a parent, unpublish, delete, create), waits until two of
# the shield's syncs have ended after the last edit, and runs verify again.
#   lab/net-check.sh NAME w7|w41 sqlite|postgres CMS_PORT purge|nopurge [REQUESTS] [VAR=VALUE ...]
# `purge`: Wagtail's frontend cache sends its PURGEs to the shield (as a site pointed at it would);
# `nopurge`: they are dropped, so only the shield's own sync (the safety net) finds the edits.
# Extra VAR=VALUE arguments go to the shield's environment. Reports: $LAB_DIR/verify/net-*.json.
set -euo pipefail
name="${1:?usage: lab/net-check.sh NAME w7|w41 sqlite|postgres CMS_PORT purge|nopurge [REQUESTS] [VAR=VALUE ...]}"
ver="${2:?}" db="${3:?}" cms_port="${4:?}" purge="${5:?purge or nopurge}"
requests="${6:-400}"
shift $(( $# < 6 ? $# : 6 ))
lab="${LAB_DIR:-/work/lab-build}"
here="$(cd "$(dirname "$0")/.." && pwd)"
shield_port=$((cms_port + 150))
out="$lab/verify"
mkdir -p "$out"

LAB_DIR="$lab" bash "$here/lab/run.sh" "$name" "$ver" "$db" "$cms_port" >/dev/null

log="$out/net-shield-$name.log"
. "$here/lab/shield.sh"
start_shield "$cms_port" "$shield_port" "$log" LOG_LEVEL=info SYNC_INTERVAL=5s "${VERIFIER_BUDGETS[@]}" "$@"

verify() {
  local when="$1" site
  for site in localhost partner.localhost; do
    (cd "$here" && npm run --silent verify -- --cms "http://127.0.0.1:$cms_port" --shield "http://127.0.0.1:$shield_port" \
      --api-path /api/v2/ --endpoints images,documents --host "$site:$cms_port" \
      --requests "$requests" --seed 1 --rate 10 --out "$out/net-$name-$purge-$when-$site.json" 2>/dev/null | tail -n 1) | sed "s/^/$when $site: /"
  done
}
last_sync() { curl -fsS "http://127.0.0.1:$shield_port/readyz" | sed -n 's/.*"lastSuccessAt":"\([^"]*\)".*/\1/p'; }

verify before
state="$lab/state/$name"
purge_url=""
[ "$purge" = purge ] && purge_url="http://127.0.0.1:$shield_port"
(cd "$here/lab/site" && LAB_STATE="$state" LAB_DB="$db" LAB_PORT="$cms_port" LAB_PG_NAME="cms_lab_$name" \
  DJANGO_SETTINGS_MODULE=labsite.settings PYTHONPYCACHEPREFIX="$state/pycache" LAB_PURGE_URL="$purge_url" \
  "$lab/venv-$ver/bin/python" manage.py edit_lab) | sed 's/^/edit: /'
edited=$(date +%s)
# Two syncs that ended after the last edit: the second began after it. Bounded at 15 minutes.
seen="$(last_sync)" syncs=0
while [ "$syncs" -lt 2 ] && [ $(( $(date +%s) - edited )) -lt 900 ]; do
  sleep 1
  now="$(last_sync)"
  if [ "$now" != "$seen" ]; then syncs=$((syncs + 1)); seen="$now"; fi
done
echo "net: $syncs syncs ended within $(( $(date +%s) - edited )) s of the last edit"
verify after
