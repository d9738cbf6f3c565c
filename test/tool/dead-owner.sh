#!/bin/sh
# The JSON report names a mutex found held by a thread that had exited:
# in dead_owners (address, owner_tid, robust), in that lock's own
# dead_owners count, and in the totals.
#   usage: dead-owner.sh PROXYLOCK DEAD-OWNER-PROGRAM
set -eu
tool=$1 prog=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$tool" run --stats="$d/r.json" "$prog" >/dev/null 2>&1
python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert r["dead_owners_found"] == 1 and r["totals"]["dead_owners"] == 1, r
(e,) = r["dead_owners"]
assert e["robust"] is False and e["owner_tid"] > 0, e
(m,) = [l for l in r["locks"] if l["address"] == e["address"]]
assert m["type"] == "mutex" and m["dead_owners"] == 1, m' "$d/r.json" ||
	{ cat "$d/r.json"; echo "not ok - the dead owner is not in the JSON report"; exit 1; }
echo "ok - the mutex held by an exited thread is in the JSON report"
