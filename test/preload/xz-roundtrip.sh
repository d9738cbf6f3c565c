#!/bin/sh
# xz compresses with two threads (pthread mutexes and condvars between its
# coordinator and workers) and decompresses with two; the data must come
# back bit for bit.
set -eu
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
seq 1 2000000 >"$d/in"
xz -T2 --block-size=1MiB -6 -c "$d/in" >"$d/in.xz"
xz -T2 -d -c "$d/in.xz" | cmp - "$d/in"
echo "xz roundtrip ok: $(wc -c <"$d/in") bytes"
