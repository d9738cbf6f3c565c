#!/bin/sh
# bench/biglittle.sh - the inversion-biglittle rows of bench/run: the
# big.LITTLE scenario (examples/biglittle.c) in the emulated arm64 guest
# (test/arm64/run-arm64.sh biglittle), appended to OUT-DIR/results.csv
# (benchmark,impl,threads,cs_ns,metric,value,unit; one run per contender,
# so value is that run's figure) and to OUT-DIR/summary.md.
#   usage: sh bench/biglittle.sh OUT-DIR [--quick]
# Never builds the arm64 kernel (about 5 minutes): it uses the guest only if
# the kernel is already cached (the test suite builds it: meson test
# --suite biglittle), otherwise it says so and adds nothing.  Not a
# pass/fail: the bounds are the test suite's business.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(cd "$1" && pwd)
secs=8
[ "${2:-}" = --quick ] && secs=4
res=$(mktemp)
trap 'rm -f "$res"' EXIT
echo "bench: inversion-biglittle (arm64 guest, ${secs}s per contender)" >&2
PLK_BIGLITTLE_SECS=$secs PLK_BIGLITTLE_OUT=$res \
	sh "$top/test/arm64/run-arm64.sh" biglittle "$top" "$top/build" --cached-only \
	>"$out/biglittle.log" 2>&1
rc=$?
if [ ! -s "$res" ]; then
	echo "bench: inversion-biglittle skipped (exit $rc): $(grep -E 'SKIPPED|FAILED' "$out/biglittle.log" | tail -1)" >&2
	exit 0
fi
awk -v csv="$out/results.csv" -v md="$out/summary.md" '
function f(key,   i, a) {
	for (i = 2; i <= NF; i++) { split($i, a, "="); if (a[1] == key) return a[2] }
	return ""
}
{
	impl = f("impl"); d = f("donate"); cs = f("cs_us"); sc = f("scenario")
	bench = "inversion-biglittle" (sc == "" ? "" : "-" sc)
	name = impl == "proxylock" ? (d == "none" ? "proxylock-nodonate" : d == "uclamp" ? "proxylock-uclamp" : "proxylock") \
	     : impl == "glibc" ? "glibc-normal" : "preload-" d
	split("wait_p50 wait_p99 wait_max cs_wall cs_wall_p99", m, " ")
	split("wait_p50_us wait_p99_us wait_max_us cs_wall_p50_us cs_wall_p99_us", k, " ")
	for (i = 1; i <= 5; i++)
		printf "%s,%s,2,%d,%s,%s,us\n", bench, name, cs * 1000, m[i], f(k[i]) >> csv
	printf "%s,%s,2,%d,cs_on_big,%s,%%\n", bench, name, cs * 1000, f("cs_big_pct") >> csv
	if (sc == "cond") {
		crows = crows sprintf("| %s | %s | %s | %s | %s |\n", d, f("wait_p50_us"), f("wait_p99_us"),
			f("cs_big_pct"), f("restored"))
		next
	}
	if (sc != "") {
		rrows = rrows sprintf("| %s | %s | %s | %s | %s |\n", sc, d, f("wait_p99_us"),
			f("cs_wall_p99_us"), f("cs_big_pct"))
		next
	}
	rows = rows sprintf("| %s | %s | %s | %s | %s | %s | %s |\n", name, d, f("wait_p50_us"),
		f("wait_p99_us"), f("wait_max_us"), f("cs_wall_p50_us"), f("cs_big_pct"))
}
END {
	printf "\n## Inversion on an emulated big.LITTLE arm64 machine (qemu TCG; us)\n\n" >> md
	printf "Small task nice 15, uclamp_max 300, may run anywhere, holding the lock for %s us of work; big task uclamp_min 1024 on a big CPU; hogs on the little CPUs (examples/biglittle.c; docs/design.md, \"The big.LITTLE scenario\").\n\n", cs >> md
	printf "| impl | lent | wait p50 | wait p99 | wait max | cs wall p50 | cs on big %% |\n| --- | --- | --- | --- | --- | --- | --- |\n%s", rows >> md
	printf "\nThe reverse (issue 30): a big foreground holder (nice 0, uclamp_min 1024, anywhere), a little background waiter (nice 15, uclamp_max 300, pinned to the little CPUs); the holder alone.\n\n" >> md
	printf "| scenario | lent | waiter wait p99 | holder cs wall p99 | holder cs on big %% |\n| --- | --- | --- | --- | --- |\n%s", rrows >> md
	printf "\nA wait for work (issue 31): the big task posts a job and waits on a condvar for its result; a worker with the small task'"'"'s context does it, no lock held, and signals.\n\n" >> md
	printf "| lent | wait p50 | wait p99 | work on big %% | worker at its own uclamp after |\n| --- | --- | --- | --- | --- |\n%s", crows >> md
}' "$res"
echo "bench: inversion-biglittle: $(wc -l <"$res") contenders added to results.csv" >&2
