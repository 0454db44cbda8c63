#!/usr/bin/env python3
"""probe-summary.py TRANSCRIPT [WIDTH]: one line per request: request, status, compact body."""
import json, re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace", newline="").read()
width = int(sys.argv[2]) if len(sys.argv) > 2 else 220
for block in text.split("\n########## ")[1:]:
    head, _, rest = block.partition("\n")
    host = rest.split("\n", 1)[0].replace("# Host: ", "")
    m = re.search(r"^HTTP/1\.1 (\d+ [^\r\n]*)", rest, re.M)
    status = m.group(1) if m else "?"
    body = rest.split("\r\n\r\n", 1)[1] if "\r\n\r\n" in rest else ""
    try:
        d = json.loads(body)
        if isinstance(d, dict) and "items" in d:
            items = []
            for it in d["items"]:
                s = str(it.get("id"))
                mt = it.get("meta", {})
                if "title" in it: s += ":" + it["title"]
                if mt.get("locale"): s += "@" + mt["locale"]
                items.append(s)
            body = "total=%s [%s]" % (d.get("meta", {}).get("total_count"), ", ".join(items))
        elif isinstance(d, dict) and "meta" in d:
            body = "id=%s %s html_url=%s detail_url=%s" % (d.get("id"), d.get("title"), d["meta"].get("html_url"), d["meta"].get("detail_url"))
        else:
            body = json.dumps(d, ensure_ascii=False)
    except Exception:
        body = " ".join(body.split())
    print(f"{head} [{host}] -> {status} | {body[:width]}")
