#!/usr/bin/env bash
# Builds the two Wagtail lab virtualenvs outside the repository.
#   LAB_SOURCES  dir holding bare/mirror clones as <owner>+<name>/repo (or <owner>+<name>, <name>.git)
#   LAB_DIR      build output (venvs, extracted sources, debs)
set -euo pipefail
LAB_SOURCES=${LAB_SOURCES:-/work/.mirror}
LAB_DIR=${LAB_DIR:-/work/lab-build}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
mkdir -p "$LAB_DIR"/{src,debs,apt/lists/partial,apt/cache/archives/partial}

# 1. Debian bookworm packages (system-wide; used directly by the 4.1 venv, partly by the 7.x venv)
if [ "${LAB_SKIP_APT:-0}" != 1 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv python3-pip python3-wheel python3-setuptools \
    python3-django python3-djangorestframework python3-django-treebeard python3-django-modelcluster \
    python3-django-taggit python3-django-filters python3-willow python3-pil python3-bs4 python3-html5lib \
    python3-openpyxl python3-psycopg2 python3-requests python3-defusedxml python3-filetype python3-tz \
    flit gunicorn sqlite3 postgresql-client curl >/dev/null
fi

# 2. Django 5.2 + newer deps for Wagtail 7.x: Debian sid/trixie's arch-independent packages, downloaded
#    with a private apt configuration (the system's sources are not touched) and unpacked into the venv.
# Versions pinned (sid moves on: if one disappears, take the current one and note it here).
SIDPKGS="python3-django=3:5.2.18-2 python3-django-treebeard=4.7.1-1 python3-django-modelcluster=6.5-1
  python3-django-taggit=6.1.0-2 python3-django-filters=25.1-4 python3-willow=1.12.0-1 python3-bs4=4.15.0-1
  python3-soupsieve=2.8.4-1 python3-openpyxl=3.1.5+dfsg-4 python3-et-xmlfile=2.0.0-2 python3-django-tasks=0.12.0-2
  python3-django-stubs-ext=6.1.2-1 python3-typing-extensions=4.16.0-5 python3-asgiref=3.12.1-1
  python3-sqlparse=0.5.5-2 python3-setuptools=84.2.0-1 python3-packaging=26.2-3"
cat > "$LAB_DIR/apt/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
SRC
APTO="-o Dir::Etc::SourceList=$LAB_DIR/apt/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$LAB_DIR/apt/lists -o Dir::Cache=$LAB_DIR/apt/cache -o Dir::State::status=/dev/null"
if [ ! -f "$LAB_DIR/debs/.done" ]; then
  apt-get $APTO update -qq
  (cd "$LAB_DIR/debs" && apt-get $APTO download $SIDPKGS)
  touch "$LAB_DIR/debs/.done"
fi

# 3. Source trees at fixed tags (git archive from the mirrors)
gitdir() { local o=${1%/*} n=${1#*/}
  for d in "$LAB_SOURCES/$o+$n/repo" "$LAB_SOURCES/$o+$n" "$LAB_SOURCES/$n.git" "$LAB_SOURCES/$o/$n.git"; do
    [ -d "$d" ] && git --git-dir="$d" rev-parse -q --verify HEAD >/dev/null 2>&1 && { echo "$d"; return; }; done
  echo "missing mirror of $1 under $LAB_SOURCES" >&2; exit 1; }
extract() { local repo=$1 tag=$2 out="$LAB_DIR/src/${1#*/}-$2"
  [ -d "$out" ] || { rm -rf "$out.tmp" && $PY "$HERE/git-export.py" "$(gitdir "$repo")" "$tag" "$out.tmp" 2>>"$LAB_DIR/src/export.log" && mv "$out.tmp" "$out"; }
  echo "$out"; }
pipi() { "$1/bin/python" -m pip install -q --no-deps --no-build-isolation --no-index "$2"; }

# 4. Wagtail 7.x venv
V7=$LAB_DIR/venv-w7
if [ ! -f "$V7/.done" ]; then
  rm -rf "$V7"; $PY -m venv --system-site-packages "$V7"
  SP=$("$V7/bin/python" -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')
  tmp=$(mktemp -d); for f in "$LAB_DIR"/debs/*.deb; do dpkg-deb -x "$f" "$tmp"; done
  cp -a "$tmp"/usr/lib/python3/dist-packages/. "$SP"/; rm -rf "$tmp"
  pipi "$V7" "$(extract encode/django-rest-framework 3.18.0)"
  pipi "$V7" "$(extract wagtail/django-modelsearch v1.1.1)"
  pipi "$V7" "$(extract wagtail/telepath v0.3.1)"
  pipi "$V7" "$(extract tbrlpld/laces v0.1.2)"
  pipi "$V7" "$(extract springload/draftjs_exporter v5.1.0)"
  pipi "$V7" "$(extract wagtail/django-permissionedforms v0.1)"
  pipi "$V7" "$(extract anyascii/anyascii 0.3.3)/impl/python"
  pipi "$V7" "$(extract wagtail/wagtail v7.3.4)"
  touch "$V7/.done"
fi

# 5. Wagtail 4.1 venv (Debian bookworm's Django 3.2 and deps)
V4=$LAB_DIR/venv-w41
if [ ! -f "$V4/.done" ]; then
  rm -rf "$V4"; $PY -m venv --system-site-packages "$V4"
  pipi "$V4" "$(extract wagtail/telepath v0.3.1)"
  pipi "$V4" "$(extract springload/draftjs_exporter v2.1.7)"
  pipi "$V4" "$(extract wagtail/django-permissionedforms v0.1)"
  pipi "$V4" "$(extract anyascii/anyascii 0.3.3)/impl/python"
  SP=$("$V4/bin/python" -c 'import sysconfig;print(sysconfig.get_paths()["purelib"])')
  cp -a "$(extract tkhyn/l18n v2021.3.0)/l18n" "$SP/"   # its setup.py needs buildout; the package itself is plain Python
  pipi "$V4" "$(extract wagtail/wagtail v4.1.9)"
  touch "$V4/.done"
fi
for v in "$V7" "$V4"; do "$v/bin/python" -c 'import django,wagtail,rest_framework;print(wagtail.__version__,"django",django.get_version(),"drf",rest_framework.VERSION)'; done
