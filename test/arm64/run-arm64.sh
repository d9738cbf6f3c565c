#!/bin/sh
# The arm64 suites (issue 14): cross-build this tree for aarch64, boot the
# arm64 kernel (build-kernel.sh, cached) on the emulated big.LITTLE
# machine (make-dtb.sh) under qemu-system-aarch64 (TCG), run programs
# there (guest-init.c is /init) and turn the serial output into a verdict.
#   usage: run-arm64.sh unit|biglittle SOURCE-DIR BUILD-DIR [--cached-only]
#   unit       the unit suites (mutex, cond, donate, robust, hardening,
#              registry, preload), one verdict each;
#   biglittle  examples/biglittle.c with PROXYLOCK_DONATE=none, =uclamp,
#              =all, and biglittle-pthread with glibc and under the
#              interposer (uclamp only), its reverse (a little waiter,
#              a big holder: BIGLITTLE_REVERSE=1, and =2 alone), and a
#              wait for work (a big waiter on a condvar, a little worker:
#              BIGLITTLE_COND=1, none and uclamp, half as long), checked
#              against generous bounds.
# --cached-only: use the arm64 kernel only if it is cached, never build it.
# The cross build lives in BUILD-DIR/arm64-cross; the guest's serial log is
# kept there (serial-MODE.log).  Exit: 0 pass; 1 fail; 77 (meson's skip)
# when the guest cannot be built or booted: said loudly, never a pass.
# Knobs: PLK_ARM64_TESTS (the unit suites to run, default all seven),
# PLK_BIGLITTLE_SECS (per run, default 8), PLK_BIGLITTLE_OUT (a file
# that receives the BIGLITTLE result lines), PLK_ARM64_TIMEOUT (seconds).
set -u
mode=$1
src=$(cd "$2" && pwd)
build=$(cd "$3" && pwd)
cached_only=
[ "${4:-}" = --cached-only ] && cached_only=--cached-only
here=$src/test/arm64
skip() { echo "=== ARM64 SUITE '$mode' SKIPPED: $* ===" >&2; exit 77; }
fail() { echo "=== ARM64 SUITE '$mode' FAILED: $* ===" >&2; exit 1; }
case $mode in unit | biglittle) ;; *) echo "usage: $0 unit|biglittle SRC BUILD" >&2; exit 2 ;; esac

for t in qemu-system-aarch64 aarch64-linux-gnu-gcc aarch64-linux-gnu-readelf dtc cpio gzip python3 meson ninja; do
	command -v $t >/dev/null || skip "$t missing (run sh test/arm64/deps.sh as root)"
done
for p in liburcu-dev:arm64 libnuma-dev:arm64 check:arm64; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		skip "$p missing (run sh test/arm64/deps.sh as root)"
done
t0=$(date +%s)
kernel=$("$here/build-kernel.sh" $cached_only) || skip "the arm64 kernel could not be built${cached_only:+ (not cached, --cached-only)}"
t_kernel=$(( $(date +%s) - t0 ))

# The cross build: a failure here is the library's, not the guest's.
xb=$build/arm64-cross
if [ ! -f "$xb/build.ninja" ]; then
	meson setup "$xb" "$src" --cross-file "$here/aarch64-linux-gnu.ini" -Dwerror=true \
		> "$build/arm64-cross-setup.log" 2>&1 ||
		{ tail -30 "$build/arm64-cross-setup.log" >&2; fail "meson setup of the aarch64 cross build failed"; }
fi
ninja -C "$xb" > "$xb/ninja.log" 2>&1 || { tail -40 "$xb/ninja.log" >&2; fail "the aarch64 cross build failed"; }
t_build=$(( $(date +%s) - t0 - t_kernel ))

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/make-dtb.sh" "$work/biglittle.dtb" 512M || skip "the big.LITTLE device tree could not be made"

# The initramfs: /init, the cross build's programs where their $ORIGIN
# rpaths expect the library (/b/lib), and the arm64 runtime libraries
# they need, found through their DT_NEEDED entries.
root=$work/root
mkdir -p "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/lib/aarch64-linux-gnu" \
	"$root/b/lib" "$root/b/test" "$root/b/examples"
mknod "$root/dev/console" c 5 1 2>/dev/null || skip "cannot mknod /dev/console for the initramfs (needs root)"
cp "$xb/test/arm64/guest-init" "$root/init"
for f in "$xb"/lib/libproxylock.so* "$xb/lib/libproxylock-preload.so"; do
	[ -d "$f" ] || cp -P "$f" "$root/b/lib/"
done
tests=${PLK_ARM64_TESTS:-mutex cond donate robust hardening registry preload}
if [ "$mode" = unit ]; then
	for t in $tests; do cp "$xb/test/test_$t" "$root/b/test/"; done
else
	cp "$xb/examples/biglittle" "$xb/examples/biglittle-pthread" "$root/b/examples/"
fi
sysdirs="/lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu"
todo=$(find "$root/b" -type f)
seen=" "
while [ -n "$todo" ]; do
	next=""
	for f in $todo; do
		for n in $(aarch64-linux-gnu-readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			case $n in libproxylock*) continue ;; esac
			case $seen in *" $n "*) continue ;; esac
			seen="$seen$n "
			lib=""
			for d in $sysdirs; do [ -e "$d/$n" ] && { lib=$d/$n; break; }; done
			[ -n "$lib" ] || fail "arm64 runtime library $n not found (sh test/arm64/deps.sh)"
			cp -L "$lib" "$root/lib/aarch64-linux-gnu/$n"
			next="$next $root/lib/aarch64-linux-gnu/$n"
		done
	done
	todo=$next
done
cp -L /lib/aarch64-linux-gnu/ld-linux-aarch64.so.1 "$root/lib/ld-linux-aarch64.so.1" ||
	fail "no arm64 dynamic loader (libc6:arm64)"
# glibc dlopen()s the unwinder for pthread_cancel and pthread_exit: no
# DT_NEEDED names it.
cp -L /lib/aarch64-linux-gnu/libgcc_s.so.1 "$root/lib/aarch64-linux-gnu/" ||
	fail "no arm64 libgcc_s.so.1 (libgcc-s1:arm64)"

# What /init runs: NAME TIMEOUT [VAR=VALUE...] PROGRAM [ARG...]
secs=${PLK_BIGLITTLE_SECS:-8}
preload="LD_PRELOAD=/b/lib/libproxylock-preload.so"
if [ "$mode" = unit ]; then
	# TCG on 2 busy host cores is a slow machine: the suites run with the
	# settings of the memcheck run (test/valgrind/meson.build): time
	# bounds 20x, fewer rounds, run-was-concurrent checks waived; and
	# Check's per-test timeouts 10x.  (Full strength, test_mutex alone
	# took over 10 minutes in the guest.)
	for t in $tests; do
		env="CK_TIMEOUT_MULTIPLIER=10 CK_VERBOSITY=normal PLK_STRESS_SLACK=20"
		env="$env PROXYLOCK_TEST_UNDER_VALGRIND=1 PROXYLOCK_TEST_THREADS=200"
		[ "$t" = preload ] && env="$env $preload"
		echo "$t 900 $env /b/test/test_$t"
	done > "$root/tests"
	limit=${PLK_ARM64_TIMEOUT:-2400}
else
	lim=$(( secs * 20 + 60 ))
	{
		# The guest's own work off the little CPUs (guest-init.c).
		echo housekeeping
		echo "none $lim PROXYLOCK_DONATE=none /b/examples/biglittle $secs"
		echo "uclamp $lim PROXYLOCK_DONATE=uclamp /b/examples/biglittle $secs"
		echo "all $lim PROXYLOCK_DONATE=all /b/examples/biglittle $secs"
		echo "pthread-glibc $lim /b/examples/biglittle-pthread $secs"
		echo "pthread-preload-uclamp $lim PROXYLOCK_DONATE=uclamp $preload /b/examples/biglittle-pthread $secs"
		# The reverse scenario (issue 30): a little background waiter on
		# a big foreground holder's lock, every kind lent; and the
		# holder alone.
		echo "reverse $lim PROXYLOCK_DONATE=all BIGLITTLE_REVERSE=1 /b/examples/biglittle $secs"
		echo "reverse-alone $lim PROXYLOCK_DONATE=all BIGLITTLE_REVERSE=2 /b/examples/biglittle $secs"
		# A wait for work (issue 31): a big waiter on a condvar lends to
		# its worker, capped little; half as long (its figures settle
		# sooner: a result every 50 ms or so, lent).
		csecs=$(( secs / 2 > 2 ? secs / 2 : 2 ))
		echo "cond-none $lim PROXYLOCK_DONATE=none BIGLITTLE_COND=1 /b/examples/biglittle $csecs"
		echo "cond-uclamp $lim PROXYLOCK_DONATE=uclamp BIGLITTLE_COND=1 /b/examples/biglittle $csecs"
	} > "$root/tests"
	# Experiments: PLK_BIGLITTLE_TESTS names a file of /tests lines instead.
	[ -n "${PLK_BIGLITTLE_TESTS:-}" ] && cp "$PLK_BIGLITTLE_TESTS" "$root/tests"
	limit=${PLK_ARM64_TIMEOUT:-$(( lim * 5 + 300 ))}
fi
(cd "$root" && find . | cpio -H newc -o --quiet | gzip -1) > "$work/init.cpio.gz"
[ -n "${PLK_ARM64_DEBUG:-}" ] && (cd "$root" && find . -type f -o -type l -o -type c | sort && cat tests) >&2

log=$xb/serial-$mode.log
t1=$(date +%s)
timeout "$limit" qemu-system-aarch64 -M virt -cpu cortex-a57 -smp 4 -m 512M -accel tcg \
	-dtb "$work/biglittle.dtb" -kernel "$kernel" -initrd "$work/init.cpio.gz" \
	-nographic -no-reboot -append "console=ttyAMA0 panic=-1 quiet" > "$log" 2>&1
qrc=$?
t_guest=$(( $(date +%s) - t1 ))
tr -d '\r' < "$log" > "$work/serial"
grep -E 'PROXYLOCK-ARM64|^BIGLITTLE|Checks:|:[FE]:' "$work/serial" | grep -v 'RUN \|klog' || true
echo "arm64: kernel ${t_kernel}s, cross build ${t_build}s, guest ${t_guest}s (qemu exit $qrc); log $log"
grep -q 'PROXYLOCK-ARM64: BOOTED' "$work/serial" || {
	tail -20 "$work/serial" >&2
	skip "the arm64 guest did not boot"
}
grep -q 'PROXYLOCK-ARM64: BOOTED 4 cpus capacity=1024,1024,400,400 asym=1' "$work/serial" ||
	fail "the guest is not the big.LITTLE machine (4 cpus, capacities 1024,1024,400,400, SD_ASYM_CPUCAPACITY)"
# The result lines first: a bench run keeps those of the programs that
# finished even if another one failed.
if [ "$mode" = biglittle ]; then
	grep '^BIGLITTLE' "$work/serial" > "$work/results"
	[ -n "${PLK_BIGLITTLE_OUT:-}" ] && cp "$work/results" "$PLK_BIGLITTLE_OUT"
fi
grep -q 'PROXYLOCK-ARM64: DONE failed=0' "$work/serial" ||
	fail "$(grep -c 'RESULT .* \(FAIL\|TIMEOUT\)' "$work/serial") program(s) failed in the guest, or it did not finish"
[ "$mode" = unit ] && exit 0
# Without energy-aware scheduling uclamp_max keeps nothing little: the
# load balancer moves a clamped task off a busy little CPU onto any idle
# big one, and the scenario would measure that instead.
grep -q 'PROXYLOCK-ARM64: EAS .* eas=1' "$work/serial" ||
	fail "the guest's scheduler did not start energy-aware scheduling (see the EAS and klog lines)"

# The scenario's figures against the targets (reported, met or
# missed) and generous bounds (asserted; TCG on a busy shared host is
# noisy).  What held in every run here since the guest's housekeeping
# (docs/results.md, "The big.LITTLE scenario"): uclamp alone moves 93-95%
# of the critical section to big CPUs and cuts the big task's p99 wait to
# 0.07-0.11x; without donation 0.0% runs on big, 7.7% once on a host with
# load average 130 (0-18% before the housekeeping step: a default-clamped
# task on a little CPU let the idle big CPUs pull the small task).
grep -q 'PROXYLOCK-ARM64: HOUSEKEEPING .* moved=[1-9][0-9]* .* wq=ok stat=ok' "$work/serial" ||
	fail "the guest's housekeeping step did not take (see its HOUSEKEEPING line)"
awk '
function f(line, key,   i, n, kv, a) {
	n = split(line, kv, " ")
	for (i = 1; i <= n; i++) { split(kv[i], a, "="); if (a[1] == key) return a[2] }
	return ""
}
/ scenario=cond/ { if ($0 ~ / donate=none /) cnone = $0; else cond = $0; next }
/ scenario=reverse-alone/ { ralone = $0; next }
/ scenario=reverse/ { rev = $0; next }
/impl=proxylock donate=none / { none = $0 }
/impl=proxylock donate=uclamp / { ucl = $0 }
/impl=proxylock donate=uclamp,affinity/ { all = $0 }
/impl=glibc / { gl = $0 }
/impl=preload donate=uclamp / { pre = $0 }
function check(cond, what) {
	printf "biglittle: %-66s %s\n", what, cond ? "ok" : "FAILED"
	if (!cond) bad++
}
# The share on big CPUs of @line, a number; -1 if the line has none.
function big(line,   v) { v = f(line, "cs_big_pct"); return v == "" ? -1 : v + 0 }
function target(cond, what) { printf "biglittle: target %-59s %s\n", what, cond ? "met" : "missed" }
function ratio(a, b, key) { return f(a, key) / (f(b, key) > 0 ? f(b, key) : 1) }
# The worker was at its own clamps after each of its results (restored=N/M, N = M > 0).
function restored(line,   r) { split(f(line, "restored"), r, "/"); return r[2] > 0 && r[1] == r[2] }
END {
	if (none == "" || ucl == "" || all == "" || gl == "" || pre == "" || rev == "" || ralone == "" ||
	    cond == "" || cnone == "") {
		print "biglittle: a run printed no result line"; exit 1
	}
	printf "biglittle: uclamp/none: wait p99 %.3f, wait max %.3f, cs wall p99 %.3f; on big %s%% vs %s%%\n",
		ratio(ucl, none, "wait_p99_us"), ratio(ucl, none, "wait_max_us"),
		ratio(ucl, none, "cs_wall_p99_us"), f(ucl, "cs_big_pct"), f(none, "cs_big_pct")
	printf "biglittle: all/none: wait p99 %.3f, wait max %.3f, cs wall p99 %.3f; on big %s%%\n",
		ratio(all, none, "wait_p99_us"), ratio(all, none, "wait_max_us"),
		ratio(all, none, "cs_wall_p99_us"), f(all, "cs_big_pct")
	printf "biglittle: preload(uclamp)/glibc: wait p99 %.3f, wait max %.3f, cs wall p99 %.3f; on big %s%% vs %s%%\n",
		ratio(pre, gl, "wait_p99_us"), ratio(pre, gl, "wait_max_us"),
		ratio(pre, gl, "cs_wall_p99_us"), f(pre, "cs_big_pct"), f(gl, "cs_big_pct")
	printf "biglittle: reverse: the big holder on big %s%% with a little waiter (%s waits), %s%% alone;" \
		" cs wall p99 %.3f x alone\n", f(rev, "cs_big_pct"), f(rev, "waits"), f(ralone, "cs_big_pct"),
		ratio(rev, ralone, "cs_wall_p99_us")
	printf "biglittle: cond, uclamp/none: wait p99 %.3f, wait max %.3f; the work on big %s%% vs %s%%;" \
		" the worker at its own uclamp after %s and %s results\n", ratio(cond, cnone, "wait_p99_us"),
		ratio(cond, cnone, "wait_max_us"), f(cond, "cs_big_pct"), f(cnone, "cs_big_pct"),
		f(cond, "restored"), f(cnone, "restored")
	# Asserted (generous: TCG on a busy shared host is noisy).
	check(f(rev, "waits") > 0, "reverse: the little waiter waited")
	check(big(rev) >= 90, "reverse: >= 90% of the big holder work on big, little waiter")
	check(f(none, "lent_uclamp") == 0 && f(ucl, "lent_uclamp") > 0, "none lends nothing, uclamp lends uclamp")
	check(ratio(ucl, none, "wait_max_us") <= 0.5, "uclamp alone: max wait <= 0.5 x none")
	check(ratio(ucl, none, "cs_wall_p99_us") <= 0.5, "uclamp alone: cs wall p99 <= 0.5 x none")
	check(ratio(all, none, "cs_wall_p99_us") <= 0.5, "all kinds: cs wall p99 <= 0.5 x none")
	check(ratio(pre, gl, "wait_max_us") <= 0.5, "interposer, uclamp alone: max wait <= 0.5 x glibc")
	check(big(ucl) >= 60, "uclamp alone: >= 60% of the critical section on big")
	check(big(pre) >= 60, "interposer, uclamp alone: >= 60% on big")
	check(big(none) >= 0 && big(none) <= 30 && big(gl) >= 0 && big(gl) <= 30,
	      "no donation, glibc: <= 30% on big")
	check(f(cnone, "lent_cond") == 0 && f(cond, "lent_cond") > 0, "cond: none lends nothing, uclamp lends through the condvar")
	check(restored(cond) && restored(cnone), "cond: the worker at its own uclamp after every result")
	check(big(cond) >= 60, "cond, uclamp alone: >= 60% of the work on big")
	check(big(cnone) >= 0 && big(cnone) <= 30, "cond, none: <= 30% of the work on big")
	check(ratio(cond, cnone, "wait_p99_us") <= 0.5, "cond, uclamp alone: p99 wait <= 0.5 x none")
	# The targets of issues 14 and 31: reported, not asserted (see README).
	target(ratio(ucl, none, "wait_p99_us") <= 0.2, "uclamp alone: p99 wait <= 0.2 x none")
	target(big(ucl) >= 80, "uclamp alone: >= 80% of the critical section on big")
	target(big(none) >= 0 && big(none) <= 5, "none: ~0% on big (<= 5%)")
	target(big(gl) >= 0 && big(gl) <= 5, "glibc: ~0% on big (<= 5%)")
	target(big(pre) >= 80, "interposer, uclamp alone: >= 80% on big")
	target(big(cond) >= 80, "cond, uclamp alone: >= 80% of the work on big")
	exit bad ? 1 : 0
}' "$work/results" || fail "the big.LITTLE scenario missed its bounds"
exit 0
