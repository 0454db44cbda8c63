#!/usr/bin/env python3
"""git-export.py GITDIR TAG OUTDIR: write the tree of TAG into OUTDIR, skipping blobs absent from a
partial mirror (e.g. large docs images) with a warning. Like `git archive TAG | tar -x`."""
import os, subprocess, sys
gitdir, tag, out = sys.argv[1:4]
ls = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "-z", "--full-tree", tag],
                    check=True, capture_output=True).stdout.split(b"\0")
entries = []
for e in ls:
    if not e:
        continue
    meta, path = e.split(b"\t", 1)
    mode, typ, sha = meta.split()
    if typ == b"blob":
        entries.append((mode, sha, path.decode()))
p = subprocess.Popen(["git", "--git-dir", gitdir, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
missing = 0
for mode, sha, path in entries:
    p.stdin.write(sha + b"\n"); p.stdin.flush()
    header = p.stdout.readline().split()
    if header[-1] == b"missing":
        missing += 1; print(f"git-export: skipped absent blob {path}", file=sys.stderr); continue
    data = p.stdout.read(int(header[2])); p.stdout.read(1)
    dest = os.path.join(out, path); os.makedirs(os.path.dirname(dest), exist_ok=True)
    if mode == b"120000":
        os.symlink(data.decode(), dest)
    else:
        with open(dest, "wb") as f: f.write(data)
        if mode == b"100755": os.chmod(dest, 0o755)
p.stdin.close(); p.wait()
print(f"git-export: {tag}: {len(entries) - missing} files, {missing} absent", file=sys.stderr)
