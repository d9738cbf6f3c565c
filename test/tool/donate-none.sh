#!/bin/sh
# --donate=none lends nothing.  The inversion scenario in plain pthread
# calls lends (affinity at least) when left alone, so the JSON report
# can tell; GNU sort is run with none as well.
#   usage: donate-none.sh PROXYLOCK INVERSION-PTHREAD
set -eu
tool=$1 inversion=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
[ "$(nproc)" -ge 2 ] || { echo "SKIP: one CPU: nothing to lend even by default"; exit 77; }
lent() {
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(",".join(r["lending"]) or "none", r["totals"]["donations"], sum(r["totals"]["lent"].values()),
      sum(l.get("donations", 0) for l in r["locks"]))' "$1"
}
"$tool" run --stats=all --stats="$d/on.json" "$inversion" 1 >"$d/on.out"
set -- $(lent "$d/on.json")
[ "$3" -gt 0 ] || { echo "not ok - by default nothing was lent ($*): the check below proves nothing"; exit 1; }
echo "ok - by default: lending $1, $2 donations, $3 kinds changed"
"$tool" run --donate=none --stats=all --stats="$d/off.json" "$inversion" 1 >"$d/off.out"
set -- $(lent "$d/off.json")
[ "$1 $2 $3 $4" = "none 0 0 0" ] || { echo "not ok - --donate=none: lending $1, $2 donations, $3 kinds changed, $4 per lock"; exit 1; }
grep -q 'lent=none sched_calls=0' "$d/off.out" || { echo "not ok - the program itself saw something lent"; cat "$d/off.out"; exit 1; }
seq 1 100000 | "$tool" run --donate=none --stats=all --stats="$d/sort.json" sort --parallel=2 -S 1M -n >/dev/null
set -- $(lent "$d/sort.json")
[ "$1 $2 $3 $4" = "none 0 0 0" ] || { echo "not ok - sort under --donate=none: $*"; exit 1; }
echo "ok - --donate=none: nothing lent (inversion scenario and sort)"
