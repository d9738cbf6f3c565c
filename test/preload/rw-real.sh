#!/bin/sh
# A real program that contends on pthread rwlocks, natively and under the
# interposer (alone, or with ALLOCATOR preloaded too, in both orders):
# WORKLOAD runs it, prefixed with $PLK_RUN (empty natively; under the
# interposer "env LD_PRELOAD=... PROXYLOCK_STATS=1 PROXYLOCK_STATS_FILE=..."
# so that only that program is interposed), and prints its results.  The
# results must be the same each time, and the stats report of the
# interposed program must show an rwlock with contended > 0: proof that
# the interposer's rwlocks, not glibc's, were in the way and still gave
# the right answers.
#   usage: rw-real.sh PRELOAD.so ALLOCATOR.so|- WORKLOAD [ARG...]
# Exits 77 (skip) if ALLOCATOR is not there or WORKLOAD does (its program
# is not installed).
set -u
so=$1 alloc=$2
shift 2
[ "$alloc" = - ] || [ -e "$alloc" ] || { echo "SKIP: $alloc is not installed"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
PLK_RUN= "$@" >"$d/native" 2>"$d/native.err" </dev/null
rc=$?
[ $rc -eq 77 ] && { cat "$d/native"; exit 77; }
[ $rc -eq 0 ] || { cat "$d/native" "$d/native.err"; echo "FAIL: natively: exit $rc" >&2; exit 1; }
orders=$so
[ "$alloc" = - ] || orders="$alloc $so
$so $alloc"
fail=0
n=0
while IFS= read -r order; do
	n=$((n + 1))
	mkdir "$d/$n"
	# Colons between the objects: $PLK_RUN is split at spaces.
	PLK_RUN="env LD_PRELOAD=$(echo "$order" | tr ' ' :) PROXYLOCK_STATS=1 PROXYLOCK_STATS_FILE=$d/$n/%p.json" \
		"$@" >"$d/pre$n" 2>"$d/pre$n.err" </dev/null
	rc=$?
	why=
	[ $rc -eq 0 ] || why="exit $rc"
	diff -u "$d/native" "$d/pre$n" >&2 || why="$why; results differ from the native run's"
	python3 - "$d/$n" >"$d/rw$n" 2>&1 <<'PY' || why="$why; $(tail -n 1 "$d/rw$n")"
import glob, json, sys
rows = []
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    r = json.load(open(f))
    rows += [(l["contended"], l["rdlock_acquisitions"], l["wrlock_acquisitions"], l["wait_ns"],
              r["program"]) for l in r["locks"] if l["type"] == "rwlock"]
rows.sort(reverse=True)
for c in rows[:5]:
    print("rwlock: contended %d, rdlock %d, wrlock %d, wait %.3f ms (%s)" % (c[0], c[1], c[2], c[3] / 1e6, c[4]))
if not rows or rows[0][0] == 0:
    sys.exit("no contended rwlock in the stats report (%d rwlock rows)" % len(rows))
PY
	if [ -n "$why" ]; then
		cat "$d/pre$n.err" >&2
		echo "FAIL: LD_PRELOAD='$order' $*: $why" >&2
		fail=1
	else
		echo "ok: LD_PRELOAD='$order': the same results as natively"
		cat "$d/rw$n"
	fi
done <<END
$orders
END
echo "results:"
cat "$d/native"
[ $fail -eq 0 ] && echo "PASS: $*"
exit $fail
