#!/usr/bin/env bash
# run.sh NAME w7|w41 sqlite|postgres PORT [extra env: LAB_API=v1cms LAB_I18N=0 LAB_LIMIT_MAX=..]
#   (re)creates the instance's database from empty, migrates, seeds, and starts gunicorn on 127.0.0.1:PORT
#   in the background (nohup). State (sqlite db, media, generated migrations, log, pid) in $LAB_DIR/state/NAME.
#   LAB_PG_ICU_LOCALE=en-US (postgres only): database collation from ICU instead of the cluster default (C.UTF-8 here)
# run.sh stop NAME
set -euo pipefail
LAB_DIR=${LAB_DIR:-/work/lab-build}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$1" = stop ]; then
  pidf="$LAB_DIR/state/$2/gunicorn.pid"; [ -f "$pidf" ] && kill "$(cat "$pidf")" && rm -f "$pidf"; exit 0
fi
NAME=$1 VER=$2 DB=$3 PORT=$4
STATE="$LAB_DIR/state/$NAME"; VENV="$LAB_DIR/venv-$VER"
[ -f "$STATE/gunicorn.pid" ] && kill "$(cat "$STATE/gunicorn.pid")" 2>/dev/null && sleep 1 || true
rm -rf "$STATE"; mkdir -p "$STATE"
export LAB_STATE="$STATE" LAB_DB="$DB" LAB_PORT="$PORT" LAB_PG_NAME="cms_lab_$NAME" DJANGO_SETTINGS_MODULE=labsite.settings
# bytecode of site/ goes to the instance state too, so that running an instance never writes into the repository
export PYTHONPYCACHEPREFIX="$STATE/pycache"
if [ "$DB" = postgres ]; then
  # LAB_PG_ICU_LOCALE=en-US creates the database with an ICU collation instead of the cluster default
  CREATE="CREATE DATABASE cms_lab_$NAME"
  [ -n "${LAB_PG_ICU_LOCALE:-}" ] && CREATE="$CREATE TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '$LAB_PG_ICU_LOCALE' LOCALE 'C.UTF-8'"
  psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS cms_lab_$NAME" -c "$CREATE" postgres
fi
cd "$HERE/site"
"$VENV/bin/python" manage.py makemigrations home -v0
"$VENV/bin/python" manage.py migrate -v0
"$VENV/bin/python" manage.py seed_lab
nohup "$VENV/bin/python" -m gunicorn labsite.wsgi:application --bind "127.0.0.1:$PORT" --workers 2 \
  --pid "$STATE/gunicorn.pid" --access-logfile "$STATE/access.log" --error-logfile "$STATE/gunicorn.log" \
  --capture-output >/dev/null 2>&1 < /dev/null &
for i in $(seq 1 50); do curl -fsS -o /dev/null "http://127.0.0.1:$PORT/api/" 2>/dev/null && break
  curl -sS -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null && break; sleep 0.2; done
echo "$NAME: Wagtail $VER on $DB at http://127.0.0.1:$PORT/ (state $STATE)"
