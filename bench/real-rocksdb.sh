#!/bin/sh
# bench/real-rocksdb.sh - issue 31's storage engine, unmodified: RocksDB's
# db_bench (Debian's rocksdb-tools) with its flush and compaction threads
# at low CPU priority (its own --enable_cpu_prio: nice 19) and two nice-0
# CPU hogs, one on each of the first two CPUs, under `proxylock run
# --donate=MODE`.  One writer, rate-limited to 2 MiB/s: with the workers
# not lowered it is seldom stopped (PLK_ROCKSDB_CPU_PRIO=false, the
# reference).  Small memtables and low level-0 triggers make the writer
# stop (not slow down) until a flush or compaction ends: it waits on the
# DB's condvar (bg_cv_) for a nice-19 background thread.  Prints the
# program's own figures on one line: ops/sec, the stall time
# (rocksdb.stall.micros), the number of stalls (rocksdb.db.write.stall),
# the write latency's p99, p99.9, p99.99 and max in µs (db_bench's
# --histogram), and the load average at the end.
#   usage: sh bench/real-rocksdb.sh none|all [SECONDS] [--stats[=FILE]]
# SECONDS: 60 by default; the first wait for each worker only teaches
# the interposer who it is (docs/design.md, "Waits for work"), so short
# runs are dominated by it.
# Environment: PROXYLOCK (the tool; default build/tools/proxylock with
# PROXYLOCK_PRELOAD=build/lib/libproxylock-preload.so), DB_BENCH
# (default db_bench), PLK_ROCKSDB_CPU_PRIO (false: the workers not lowered,
# the reference), PLK_ROCKSDB_RATE (the writer's bytes/s), PLK_ROCKSDB_DIR (the database's directory, a fresh
# one per run; default under /tmp), PLK_ROCKSDB_LOG (keep db_bench's
# output there).  Exits 77 if db_bench is missing.  Not a pass/fail, not
# in CI: the figures go to docs/results-lend.md.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}
secs=${2:-60}
stats=${3:-}
case $mode in none|all) ;; *) echo "usage: $0 none|all [SECONDS] [--stats[=FILE]]" >&2; exit 2 ;; esac
case $secs in ''|*[!0-9]*|0) echo "$0: SECONDS must be a whole number above 0, not '$secs'" >&2; exit 2 ;; esac
case $stats in ''|--stats|--stats=*) ;; *) echo "$0: the third argument is --stats or --stats=FILE" >&2; exit 2 ;; esac
dbb=${DB_BENCH:-db_bench}
if ! command -v "$dbb" >/dev/null 2>&1; then
	echo "$0: SKIP: $dbb not found (apt-get install rocksdb-tools)" >&2
	exit 77
fi
tool=${PROXYLOCK:-$top/build/tools/proxylock}
if [ -z "${PROXYLOCK:-}" ]; then
	PROXYLOCK_PRELOAD=${PROXYLOCK_PRELOAD:-$top/build/lib/libproxylock-preload.so}
	export PROXYLOCK_PRELOAD
fi
[ -x "$tool" ] || { echo "$0: no proxylock at $tool (ninja -C build, or set PROXYLOCK)" >&2; exit 1; }

work=$(mktemp -d "${PLK_ROCKSDB_DIR:-/tmp}/plk-rocksdb.XXXXXX")
hogs=
cleanup() {
	for p in $hogs; do kill "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for cpu in 0 1; do
	taskset -c "$cpu" sh -c 'while :; do :; done' &
	hogs="$hogs $!"
done

# --enable_cpu_prio: the flush and compaction pools at nice 19
#   (Env::LowerThreadPoolCPUPriority).
# --benchmark_write_rate_limit 2 MiB/s: what the workers keep up with at
#   nice 0 beside the hogs (unlimited, the writer is stopped most of the
#   time with the workers not lowered too, and stall time says nothing).
# max_bytes_for_level_base 4 MiB, target_file_size_base 1 MiB: a
#   compaction's cost stays bounded as the run goes on (random keys
#   overlap all of level 1).
# write_buffer_size 1 MiB, max_write_buffer_number 2: a full memtable
#   with one already waiting for its flush stops writes.
# level0 slowdown = stop = 4: four level-0 files stop writes until a
#   compaction (no rate-limited slowdown, which sleeps instead of
#   waiting for the worker).
# --disable_wal, no compression: the writer's and workers' time is CPU,
#   not the disk's or a codec's.
# --duration with a large --num: a fixed time, so ops/sec compares.
"$tool" run --donate="$mode" ${stats:+"$stats"} -- "$dbb" --benchmarks=fillrandom --db="$work/db" \
	--duration="$secs" --num=100000000 --value_size=400 --threads=1 \
	--benchmark_write_rate_limit="${PLK_ROCKSDB_RATE:-2097152}" --max_bytes_for_level_base=4194304 \
	--target_file_size_base=1048576 \
	--enable_cpu_prio="${PLK_ROCKSDB_CPU_PRIO:-true}" --write_buffer_size=1048576 --max_write_buffer_number=2 \
	--level0_file_num_compaction_trigger=2 --level0_slowdown_writes_trigger=4 \
	--level0_stop_writes_trigger=4 --disable_wal=true --compression_type=none \
	--statistics=true --histogram=true >"$work/out" 2>"$work/err"
rc=$?
[ -n "${PLK_ROCKSDB_LOG:-}" ] && cat "$work/out" "$work/err" >"$PLK_ROCKSDB_LOG"
[ "$stats" = --stats ] && grep '^proxylock' "$work/err" >&2
if [ $rc -ne 0 ]; then
	echo "$0: db_bench exited $rc" >&2
	tail -5 "$work/err" >&2
	exit 1
fi
awk -v mode="$mode" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" '
/^fillrandom/ { for (i = 1; i <= NF; i++) if ($i == "ops/sec") ops = $(i - 1) }
/^rocksdb.stall.micros COUNT/ { stall = $4 }
/^rocksdb.db.write.stall / { for (i = 1; i <= NF; i++) if ($i == "COUNT") stalls = $(i + 2) }
/^Min: .*Max:/ { max = $6 }
/^Percentiles:/ { p99 = $7; p999 = $9; p9999 = $11 }
END {
	printf "mode=%s ops_per_sec=%s stall_ms=%.1f stalls=%s p99_us=%s p99.9_us=%s p99.99_us=%s max_us=%s load=%s\n",
	       mode, ops, stall / 1000, stalls, p99, p999, p9999, max, load
}' "$work/out"
