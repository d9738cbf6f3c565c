#!/bin/sh
# `proxylock run` on a real threaded program nobody here wrote, GNU sort
# (--parallel=2: a pthread mutex and condvar per merge node): the same
# output as without the tool, byte for byte, and a report, as a table on
# stderr (--stats) and as valid JSON in a file (--stats=FILE, which
# leaves stderr alone), made by the sort process itself.
# CPython's threads (its GIL is a pthread mutex and condvar) give
# mutexes of different contention: the JSON lists them most contended
# first.
#   usage: run-real.sh PROXYLOCK PYTHON-THREADS-SCRIPT
set -eu
tool=$1 pyscript=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
seq 1 200000 | awk 'BEGIN { srand(7) } { print int(rand() * 1e9) " " $0 }' >"$d/in"
sort --parallel=2 -S 4M -n "$d/in" >"$d/plain.out" 2>"$d/plain.err"
"$tool" run --stats=all sort --parallel=2 -S 4M -n "$d/in" >"$d/table.out" 2>"$d/table.err"
cmp "$d/plain.out" "$d/table.out" || { echo "not ok - output differs under proxylock run"; exit 1; }
grep -Eq '^proxylock: interposer active: [1-9][0-9]* mutexes' "$d/table.err" ||
	{ echo "not ok - no report on stderr"; cat "$d/table.err"; exit 1; }
grep -q '^proxylock: type  *lock  *locked  *contended' "$d/table.err" ||
	{ echo "not ok - no table header"; exit 1; }
echo "ok - sort's output is the same under proxylock run --stats, and the table is on stderr"

# A relative file lands where the caller is, though the program changes
# directory before it writes the report (sh cds, then execs sort).
(cd "$d" && "$tool" run --stats=all --stats=report.json -- \
	sh -c 'cd / && exec sort --parallel=2 -S 4M -n "$0"' "$d/in" >json.out 2>json.err)
[ -f "$d/report.json" ] || { echo "not ok - no report.json where proxylock run was called"; exit 1; }
cmp "$d/plain.out" "$d/json.out" || { echo "not ok - output differs under --stats=FILE"; exit 1; }
cmp "$d/plain.err" "$d/json.err" || { echo "not ok - stderr differs under --stats=FILE"; exit 1; }
python3 - "$d/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["version"] == 2 and r["program"].endswith("sort"), r
assert r["mutexes_seen"] >= 1 and len([l for l in r["locks"] if l["type"] == "mutex"]) == r["mutexes_seen"], r
for k in ("contended", "sleeps", "handoffs", "donations", "lent", "dead_owners"):
    assert k in r["totals"], k
m = r["locks"][0]
for k in ("address", "call_sites", "acquisitions", "contended", "wait_ns", "max_wait_ns",
          "donations", "lent", "dead_owners"):
    assert k in m, k
assert int(m["address"], 16) > 0 and set(m["lent"]) == {"uclamp", "affinity", "nice", "rt"}
c = [l["contended"] for l in r["locks"] if l["type"] == "mutex"]
assert c == sorted(c, reverse=True), "not sorted by contention"
assert sum(l["acquisitions"] for l in r["locks"] if l["type"] == "mutex") > 0
PY
echo "ok - --stats=FILE: stdout and stderr unchanged, the JSON report is valid and complete"

# %p: python3 may be a wrapper script (pyenv's shim) whose own processes
# report too; the file is never overwritten, so each gets its own, and
# python's is the one with condvars.
out=$("$tool" run --stats=all --stats="$d/py.%p.json" python3 "$pyscript")
[ "$out" = "$(python3 "$pyscript")" ] || { echo "not ok - python3's output differs: $out"; exit 1; }
python3 -c 'import json, sys
r = max((json.load(open(f)) for f in sys.argv[1:]), key=lambda r: r["condvars_seen"])
c = [l["contended"] for l in r["locks"] if l["type"] == "mutex"]
assert len(c) >= 2 and c[0] > 0 and c[-1] < c[0] and c == sorted(c, reverse=True), c
assert r["condvars_seen"] >= 1 and all("waits" in l for l in r["locks"] if l["type"] == "condvar")
assert r["totals"]["contended"] >= c[0]' "$d"/py.*.json ||
	{ echo "not ok - python3: the JSON report is not sorted by contention"; exit 1; }
echo "ok - python3 threads: the same output, and its locks most contended first in the JSON"
