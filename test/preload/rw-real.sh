#!/bin/sh
# A real program that contends on pthread rwlocks, natively and under the
# interposer (alone, or with ALLOCATOR preloaded too, in both orders):
# WORKLOAD runs it, prefixed with $PLK_RUN (empty natively; under the
# interposer "env LD_PRELOAD=... PROXYLOCK_STATS=1 PROXYLOCK_STATS_FILE=..."
# so that only that program is interposed), and prints its results.  The
# results must be the same each time, and the stats report of the
# interposed program must show an rwlock with contended > 0: proof that
# the interposer's rwlocks, not glibc's, were in the way and still gave
# the right answers.  Whether readers and a writer meet is up to the
# scheduler (on a busy machine, now and then not at all): each order gets
# up to ATTEMPTS runs (default 5) to show contention, and every run must
# give the native results.
#   usage: [ATTEMPTS=n] rw-real.sh PRELOAD.so ALLOCATOR.so|- WORKLOAD [ARG...]
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

# attempt ORDER RUN: WORKLOAD under LD_PRELOAD=ORDER, into $d/RUN.
# 0: the native results and a contended rwlock; 2: the native results
# but no contended rwlock; 1: otherwise.  Why not 0: in $why.
attempt() {
	order=$1 run=$d/$2
	shift 2
	mkdir "$run"
	# Colons between the objects: $PLK_RUN is split at spaces.
	PLK_RUN="env LD_PRELOAD=$(echo "$order" | tr ' ' :) PROXYLOCK_STATS=1 PROXYLOCK_STATS_FILE=$run/%p.json" \
		"$@" >"$run/out" 2>"$run/err" </dev/null
	rc=$?
	why=
	[ $rc -eq 0 ] || why="exit $rc"
	diff -u "$d/native" "$run/out" >&2 || why="$why; results differ from the native run's"
	[ -z "$why" ] || { cat "$run/err" >&2; return 1; }
	python3 - "$run" >"$run/rw" 2>&1 <<'PY' && return 0
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
	why=$(tail -n 1 "$run/rw")
	return 2
}

orders=$so
[ "$alloc" = - ] || orders="$alloc $so
$so $alloc"
fail=0
n=0
while IFS= read -r order; do
	i=0
	while :; do
		n=$((n + 1)) i=$((i + 1))
		attempt "$order" $n "$@"
		rc=$?
		[ $rc -eq 2 ] && [ $i -lt "${ATTEMPTS:-5}" ] &&
			{ echo "run $i: $why; again"; continue; }
		break
	done
	if [ $rc -ne 0 ]; then
		echo "FAIL: LD_PRELOAD='$order' $* (run $i): $why" >&2
		fail=1
	else
		echo "ok: LD_PRELOAD='$order' (run $i): the same results as natively"
		cat "$d/$n/rw"
	fi
done <<END
$orders
END
echo "results:"
cat "$d/native"
[ $fail -eq 0 ] && echo "PASS: $*"
exit $fail
