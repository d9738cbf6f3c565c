#!/bin/sh
# The review of issue 34, item 3: a report from a signal names a bounded
# number of addresses by their symbol (a search of a symbol table each),
# the rest by module and offset, and says how many; the report at exit
# names them all.  many_sites.c contends 200 locks, each first at a call
# site of its own.
#   usage: report-bounded.sh PROXYLOCK MANY-SITES-PROGRAM
set -u
tool=$1 prog=$2
python3 - "$tool" "$prog" <<'PY'
import json, re, signal, subprocess, sys, tempfile, os
tool, prog = sys.argv[1], sys.argv[2]
BOUND = 128  # report.c's SIGNAL_NAMES
d = tempfile.mkdtemp()
def start(stats):
    p = subprocess.Popen([tool, "run", "--stats=" + stats, prog], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    if p.stdout.readline() != "ready\n":
        sys.exit("not ok - many_sites did not start")
    return p
def frames(j):
    return [f for l in j["locks"] for s in l["call_sites"] for f in s["stack"]]
bad = 0
def bounded(j, when):
    global bad
    fr = frames(j)
    named = {f for f in fr if "!" in f}
    if len(j["locks"]) >= 200 and len(named) <= BOUND and j.get("frames_named_by_offset", 0) > 0:
        print("ok - %s: %d frames, %d named by symbol (at most %d), %d by module and offset"
              % (when, len(fr), len(named), BOUND, j["frames_named_by_offset"]))
    else:
        print("not ok - %s: %d locks, %d frames, %d distinct named by symbol (bound %d), "
              "frames_named_by_offset %s" % (when, len(j["locks"]), len(fr), len(named), BOUND,
                                             j.get("frames_named_by_offset")))
        bad = 1
    odd = [f for f in fr if "!" not in f and not re.match(r"^[^ ]+\+0x[0-9a-f]+$", f)]
    if odd:
        print("not ok - %s: frames neither named nor module+offset: %s" % (when, odd[:5]))
        bad = 1
# On request, then at exit.
p = start("%s/exit.json" % d)
r = subprocess.run([tool, "report", "--json", str(p.pid)], capture_output=True, text=True,
                   timeout=60)
p.communicate("", timeout=60)
try:
    bounded(json.loads(r.stdout), "on request")
except ValueError:
    print("not ok - no JSON report on request: %r %r" % (r.stdout[:300], r.stderr))
    bad = 1
j = json.load(open("%s/exit.json" % d))
named = {f for f in frames(j) if "!" in f}
if len(named) > BOUND and j.get("frames_named_by_offset") == 0:
    print("ok - at exit: all %d named by symbol" % len(named))
else:
    print("not ok - at exit: %d named, frames_named_by_offset %s" %
          (len(named), j.get("frames_named_by_offset")))
    bad = 1
# Ended by SIGTERM: from its handler, bounded too.
p = start("%s/term.json" % d)
p.send_signal(signal.SIGTERM)
p.wait(timeout=60)
try:
    bounded(json.load(open("%s/term.json" % d)), "ended by SIGTERM")
except (OSError, ValueError) as e:
    print("not ok - no JSON report at SIGTERM: %s" % e)
    bad = 1
sys.exit(bad)
PY
