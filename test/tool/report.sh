#!/bin/sh
# Issue 34, the report: it starts with the program and its PID; a
# process that contended nothing says nothing unless --stats=all (so a
# shell in front of the program adds no report); --top and --sort
# choose the rows; --stats=FILE gives each process its own file, the
# name as given to the program's own report; a program ended by SIGTERM
# or SIGINT still reports, and still dies of the signal, while its own
# handlers (CPython's KeyboardInterrupt) are what they would be;
# `proxylock report PID` gets a report from a running program.
#   usage: report.sh PROXYLOCK
set -u
tool=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
ok() { echo "ok - $*"; }
bad() { echo "not ok - $*"; fail=1; }
# Three threads that fight over one lock for $1 seconds (CPython's GIL
# and the lock: mutexes and condvars), then exit 0.
cat >"$d/contend.py" <<'PY'
import signal, sys, threading, time
print(signal.getsignal(signal.SIGINT), flush=True)
l = threading.Lock()
stop = time.time() + float(sys.argv[1])
def f():
    while time.time() < stop:
        with l:
            pass
ts = [threading.Thread(target=f, daemon=True) for _ in range(3)]
for t in ts:
    t.start()
try:
    while time.time() < stop:
        time.sleep(0.05)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(3)
PY

"$tool" run --stats true 2>"$d/quiet.err"
[ ! -s "$d/quiet.err" ] && ok "a process that contended nothing prints nothing" ||
	bad "true under --stats printed: $(cat "$d/quiet.err")"
"$tool" run --stats=all true 2>"$d/all.err"
grep -Eq "^proxylock: report of [^ ]*true \\(pid [0-9]+\\), at exit$" "$d/all.err" &&
	ok "--stats=all reports it, and the report starts with the program and its PID" ||
	bad "--stats=all: $(head -2 "$d/all.err")"

"$tool" run --stats sh -c 'python3 "$0" 1 >/dev/null' "$d/contend.py" 2>"$d/shim.err"
n=$(grep -c '^proxylock: report of ' "$d/shim.err")
[ "$n" = 1 ] && grep -q '^proxylock: report of .*python' "$d/shim.err" &&
	ok "a shell in front of the program adds no report of its own" ||
	bad "sh -c python3: $n reports: $(grep '^proxylock: report of' "$d/shim.err")"
grep -q '^proxylock:     first contended at .*!' "$d/shim.err" &&
	ok "the contended lock is named by a symbolised stack" ||
	bad "no symbolised 'first contended at' line: $(cat "$d/shim.err")"

"$tool" run --stats --top=1 --sort=held python3 "$d/contend.py" 1 >/dev/null 2>"$d/top.err"
rows=$(grep -Ec '^proxylock: (mutex|rwlock) +#' "$d/top.err")
[ "$rows" = 1 ] && grep -q '1 of [0-9]* locks shown, by held' "$d/top.err" &&
	ok "--top=1 --sort=held: one row, by held" || bad "--top=1 --sort=held: $(cat "$d/top.err")"

# One file a process: the program (the python the shell becomes) takes
# the name, the other one the name with its PID, and says so.
"$tool" run --stats="$d/r.json" sh -c 'python3 "$0" 1; exec python3 "$0" 1' "$d/contend.py" \
	>/dev/null 2>"$d/file.err"
set -- "$d"/r.*.json
[ -f "$d/r.json" ] && [ $# = 1 ] && [ -f "$1" ] && grep -q 'the report of pid [0-9]* is in' "$d/file.err" &&
	ok "--stats=FILE: one file a process, never overwritten ($(basename "$1"))" ||
	bad "--stats=FILE with two processes: $(ls "$d") / $(cat "$d/file.err")"

# The name given is the program's: a helper its shell runs and that ends
# first (as pyenv's python3 shim runs 40) takes the name with its PID,
# quietly, and the program the shell becomes takes the name.
py=$(python3 -c 'import sys; print(sys.executable)')
"$tool" run --stats=all --stats="$d/own.json" sh -c '/bin/true; exec "$0" "$1" 1' \
	"$py" "$d/contend.py" >/dev/null 2>"$d/own.err"
set -- "$d"/own.*.json
if python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
assert "python" in r["program"] and r["totals"]["contended"] > 0, r["program"]
assert json.load(open(sys.argv[2]))["program"].endswith("true")' "$d/own.json" "$1" 2>"$d/own.py" &&
   [ $# = 1 ] && [ ! -s "$d/own.err" ]; then
	ok "--stats=all --stats=FILE: FILE is the program's report, a helper's has its PID"
else
	bad "--stats=all --stats=FILE: $(tail -1 "$d/own.py"); files $(cd "$d" && echo own*); stderr $(cat "$d/own.err")"
fi

# Ended by a signal: the report, and the same death.
python3 - "$tool" "$d" <<'PY' || fail=1
import json, os, signal, subprocess, sys, time
tool, d = sys.argv[1], sys.argv[2]
def run(args, sig, stats="--stats"):
    p = subprocess.Popen([tool, "run", stats, "python3", d + "/contend.py", "20"] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    time.sleep(1)
    p.send_signal(sig)
    out, err = p.communicate(timeout=20)
    return p.returncode, first + out, err
bad = 0
rc, out, err = run([], signal.SIGTERM)
if rc == -signal.SIGTERM and "ended by SIGTERM" in err and "first contended at" in err:
    print("ok - ended by SIGTERM: the report, and still killed by SIGTERM")
else:
    print("not ok - SIGTERM: status %s, stderr: %s" % (rc, err[:400])); bad = 1
rc, out, err = run([], signal.SIGINT)
if rc == 3 and "KeyboardInterrupt" in out and "default_int_handler" in out and "at exit" in err:
    print("ok - SIGINT: CPython's own handler still installed and run (exit 3), the report at exit")
else:
    print("not ok - SIGINT: status %s, stdout %r, stderr: %s" % (rc, out, err[:300])); bad = 1
# A program that asks for SIG_DFL on SIGINT dies of it, with its report.
p = subprocess.Popen([tool, "run", "--stats", "python3", "-c",
                      "import signal, runpy, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                      "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')",
                      d + "/contend.py", "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True)
p.stdout.readline()
time.sleep(1)
p.send_signal(signal.SIGINT)
out, err = p.communicate(timeout=20)
if p.returncode == -signal.SIGINT and "ended by SIGINT" in err:
    print("ok - SIGINT at SIG_DFL: the report, and still killed by SIGINT")
else:
    print("not ok - SIGINT at SIG_DFL: status %s, stderr: %s" % (p.returncode, err[:300])); bad = 1
# On request, twice, from a running program: text, then JSON.  It runs
# until both are in (a loaded machine makes a report slow), then is ended.
p = subprocess.Popen([tool, "run", "--stats", "python3", d + "/contend.py", "60"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
p.stdout.readline()
time.sleep(1)
r1 = subprocess.run([tool, "report", str(p.pid)], capture_output=True, text=True, timeout=20)
r2 = subprocess.run([tool, "report", "--json", str(p.pid)], capture_output=True, text=True,
                    timeout=20)
p.terminate()
p.communicate(timeout=20)
try:
    j = json.loads(r2.stdout)
except ValueError:
    j = {}
if (r1.returncode == 0 and "on request" in r1.stdout and "(pid %d)" % p.pid in r1.stdout and
        r2.returncode == 0 and j.get("pid") == p.pid and j["totals"]["contended"] > 0):
    print("ok - proxylock report PID: the text and the JSON report of the running program")
else:
    print("not ok - proxylock report: %r %r / %r %r" % (r1.returncode, r1.stdout[:200] + r1.stderr,
                                                     r2.returncode, r2.stdout[:200] + r2.stderr))
    bad = 1
# Not a program with stats: refused, nothing sent.
s = subprocess.Popen(["sleep", "5"])
r = subprocess.run([tool, "report", str(s.pid)], capture_output=True, text=True)
alive = s.poll() is None
s.kill()
if r.returncode == 1 and alive and "does not run under the interposer" in r.stderr:
    print("ok - proxylock report on a program without the interposer: refused, nothing sent")
else:
    print("not ok - report on sleep: %r %r, alive %s" % (r.returncode, r.stderr, alive)); bad = 1
sys.exit(bad)
PY
exit $fail
