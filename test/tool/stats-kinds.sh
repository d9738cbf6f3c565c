#!/bin/sh
# Issue 34, counting: every kind of acquisition is counted in its lock's
# row (timed and clock waits as contended, condvar re-acquisitions as
# acquisitions), hold times are there for each (an rwlock's by write and
# read), a recursive mutex's hold is one hold, and the totals are the
# sums of the rows; and a semaphore's waits for work that lent to its
# poster are in totals.lent_to_wakers (issue 31's counter, in issue 34's
# report).  stats_kinds.c says which lock is which.
#   usage: stats-kinds.sh PROXYLOCK STATS-KINDS-PROGRAM
set -eu
tool=$1 prog=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$tool" run --stats="$d/r.json" "$prog" >"$d/names"
python3 - "$d/r.json" "$d/names" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
names = dict(l.split() for l in open(sys.argv[2]))
sem_ran = names.pop("sem-lends") == "1"
locks = {int(l["address"], 16): l for l in r["locks"]}
lock = {n: locks.get(int(a, 16)) for n, a in names.items()}
fail = []
def check(ok, what):
    if not ok:
        fail.append(what)
for n in ("timed", "clock", "plain", "cond", "rw", "rec"):
    check(lock[n] is not None, "%s: no row" % n)
if fail:
    sys.exit("not ok - " + "; ".join(fail))
ms = 1000000
for n in ("timed", "clock"):
    l = lock[n]
    check(l["acquisitions"] == 20, "%s: %d acquisitions, not 20" % (n, l["acquisitions"]))
    check(l["contended"] >= 1 and l["wait_ns"] >= 1 * ms,
          "%s: contended %d, wait %d ns: its waits were not counted" % (n, l["contended"], l["wait_ns"]))
    check(l.get("holds") == 20 and l.get("held_ns", 0) >= 20 * 3 * ms and l.get("max_held_ns", 0) >= 3 * ms,
          "%s: %s holds, %s ns held, max %s: want 20, >= 60 ms, >= 3 ms" %
          (n, l.get("holds"), l.get("held_ns"), l.get("max_held_ns")))
l = lock["plain"]
check(l.get("holds") == 20 and l.get("held_ns", 0) >= 20 * ms and l.get("max_held_ns", 0) >= ms,
      "plain: %s holds, %s ns" % (l.get("holds"), l.get("held_ns")))
l = lock["cond"]
# 1 lock + 3 re-acquisitions (a wait that finds turn set at once is none)
check(l["acquisitions"] >= 4, "cond: %d acquisitions: re-acquisitions not counted" % l["acquisitions"])
check(l.get("max_held_ns", 0) >= 5 * ms and l.get("held_ns", 0) >= 15 * ms,
      "cond: held %s ns, max %s: the hold after a re-acquisition is missing" %
      (l.get("held_ns"), l.get("max_held_ns")))
l = lock["rw"]
check(l.get("held_write", {}).get("count") == 5 and l["held_write"]["max_ns"] >= 2 * ms,
      "rw: write holds %s" % l.get("held_write"))
check(l.get("held_read", {}).get("count") == 10 and l["held_read"]["max_ns"] >= 3 * ms,
      "rw: read holds %s" % l.get("held_read"))
l = lock["rec"]
check(l["acquisitions"] == 8 and l.get("holds") == 4 and l.get("held_ns", 0) >= 4 * ms,
      "rec: %d acquisitions, %s holds: a recursive re-lock is no hold of its own" %
      (l["acquisitions"], l.get("holds")))
t = r["totals"]
rows = [l for l in r["locks"] if l["type"] != "condvar"]
for k in ("contended", "acquisitions", "wait_ns", "held_ns", "donations"):
    s = sum(l.get(k, 0) for l in rows)
    check(t.get(k) == s, "totals.%s is %s, the rows add up to %d" % (k, t.get(k), s))
w = t.get("lent_to_wakers")
check(isinstance(w, dict) and isinstance(w.get("condvar"), int) and isinstance(w.get("semaphore"), int),
      "totals.lent_to_wakers is %r: want {condvar: N, semaphore: N}" % (w,))
if sem_ran and isinstance(w, dict):
    check(w.get("semaphore", 0) >= 1,
          "totals.lent_to_wakers.semaphore is %s after 10 waits for a poster at nice +10 on "
          "another CPU: want >= 1" % w.get("semaphore"))
if fail:
    sys.exit("not ok - " + "\n  ".join(fail))
print("ok - timed and clock waits counted, hold times for every kind, totals = sums of rows, "
      "semaphore lends %s" % ("counted" if sem_ran else "not tried (one CPU, or nice > 9)"))
PY
