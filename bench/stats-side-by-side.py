#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The cost of `proxylock run --stats`, `proxylock run` and mutrace against
the program alone (docs/results-stats.md): ROUNDS interleaved rounds, each
program under each configuration in turn; medians of wall and CPU time
(user + system of the child, wait4) and their ratios to the program alone
in the same run.

  usage: BUILD=build MUTRACE_SO=.../libmutrace.so DATA=dir \
         python3 bench/stats-side-by-side.py [ROUNDS] [PROGRAM,...]

DATA holds big.txt (sort's input), rand.txt (zstd's) and 120m.txt (pigz's);
see docs/results-stats.md for how they were made."""
import os, subprocess, sys, time, statistics
B = os.environ.get("BUILD", "build")
T = os.path.abspath(B + "/tools/proxylock")
MT = os.environ["MUTRACE_SO"]
D = os.environ.get("DATA", "/tmp")
env = dict(os.environ, PROXYLOCK_PRELOAD=os.path.abspath(B + "/lib/libproxylock-preload.so"))
progs = {
 "sysbench-mutex": (["sysbench", "mutex", "--threads=2", "--mutex-num=64", "--mutex-locks=2000000", "--mutex-loops=100", "run"], "/dev/null"),
 "sort": (["sort", "--parallel=2", "-S", "100M", D + "/big.txt"], "/dev/null"),
 "zstd": (["zstd", "-T2", "-3", "-c", "-q", D + "/rand.txt"], "/dev/null"),
 "pigz": (["pigz", "-p", "2", "-c", D + "/120m.txt"], "/dev/null"),
}
confs = {
 "alone": lambda c: (c, {}),
 "mutrace": lambda c: (c, {"LD_PRELOAD": MT}),
 "proxylock": lambda c: ([T, "run"] + c, {}),
 "proxylock-stats": lambda c: ([T, "run", "--stats"] + c, {}),
}
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
only = sys.argv[2].split(",") if len(sys.argv) > 2 else list(progs)
progs = {k: v for k, v in progs.items() if k in only}
times = {(p, c): [] for p in progs for c in confs}
cpu = {(p, c): [] for p in progs for c in confs}
for r in range(rounds):
    for p, (cmd, out) in progs.items():
        for c, f in confs.items():
            argv, extra = f(cmd)
            e = dict(env, **extra)
            with open(out, "wb") as o, open("/dev/null", "wb") as n:
                t0 = time.monotonic()
                pr = subprocess.Popen(argv, stdout=o, stderr=n, env=e)
                _, st, ru = os.wait4(pr.pid, 0)
                rc = os.waitstatus_to_exitcode(st)
                times[(p, c)].append(time.monotonic() - t0)
                cpu[(p, c)].append(ru.ru_utime + ru.ru_stime)
            assert rc == 0, (p, c, rc)
for p in progs:
    base = statistics.median(times[(p, "alone")])
    cbase = statistics.median(cpu[(p, "alone")])
    print("%-5s alone: wall median %.3f s, cpu median %.3f s" % (p, base, cbase))
    for c in confs:
        t = times[(p, c)]
        u = cpu[(p, c)]
        print("   %-16s wall %.3f s (x%.2f; min %.3f max %.3f)  cpu %.3f s (x%.2f)  n=%d" %
              (c, statistics.median(t), statistics.median(t) / base, min(t), max(t),
               statistics.median(u), statistics.median(u) / cbase, len(t)))
