#!/usr/bin/env bash
# probe-multisite.sh NAME w7|w41 PORT : on a throw-away instance started with LAB_LOCALE_MW=1 (run.sh),
#  (a) probes with django.middleware.locale.LocaleMiddleware active, then
#  (b) adds a second Site on hostname "localhost" (port 9999, root Partner Home) and probes ?site=localhost.
LAB_DIR=${LAB_DIR:-/work/lab-build}; HERE=$(cd "$(dirname "$0")" && pwd)
NAME=$1 VER=$2 P=$3; A=/api/v2; M="localhost:$P"
req() { local m=$1 h=$2 u=$3; shift 3
  printf '\n########## %s %s%s\n# Host: %s %s\n' "$m" "$A" "$u" "$h" "$*"
  curl -sS -i -X "$m" -H "Host: $h" "$@" "http://127.0.0.1:$P$A$u"; }
echo "# $(date -u +%FT%TZ) port $P; LocaleMiddleware ON"
req GET "$M" "/pages/?fields=-title&limit=2"
req GET "$M" "/pages/26/"
req GET "$M" "/pages/999/"
req GET "$M" "/pages/?locale=xx"
req GET "$M" "/pages/find/?html_path=/nope/"
req GET "$M" "/pages/find/?html_path=/about/" -H "Accept-Language: de"
req GET "$M" "/pages/find/?html_path=/about/"
req GET "$M" "/pages/3/" -H "Accept-Language: de"
req GET "$M" "/pages/?fields=-title&limit=2" -H "Accept-Language: de"
req GET "$M" "/images/999/"
req GET "$M" "/nothing/"
echo; echo "==================== second Site on hostname localhost (port 9999)"
(cd "$HERE/site" && LAB_STATE="$LAB_DIR/state/$NAME" PYTHONPYCACHEPREFIX="$LAB_DIR/state/$NAME/pycache" "$LAB_DIR/venv-$VER/bin/python" manage.py shell -c '
from wagtail.models import Site, Page
Site.objects.create(hostname="localhost", port=9999, root_page=Page.objects.get(id=26), site_name="Second localhost")' >/dev/null 2>&1)
kill -HUP "$(cat "$LAB_DIR/state/$NAME/gunicorn.pid")"; sleep 2
for s in localhost localhost:9999 "localhost:$P" partner.localhost; do
  req GET "$M" "/pages/?site=$s&fields=-title&limit=2"
  req GET "$M" "/pages/8/?site=$s"
  req GET "$M" "/pages/find/?id=8&site=$s"
done
for h in "localhost:9999" "localhost:$P" "localhost"; do req GET "$h" "/pages/?fields=-title&limit=2"; done
