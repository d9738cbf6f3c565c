#!/bin/sh
# The review of issue 34, item 5: a report on request being written when
# the program exits, or when it forks, costs neither its report: exit
# waits for the request's report (bounded: a requester that stops
# reading stalls it 2 s at most) and then writes its own; a child forked
# meanwhile starts with no report in progress, and reports at its exit.
# The requester here queues the signal as `proxylock report --json`
# does, and reads nothing: many_sites' JSON report (over 64 KiB) fills
# its pipe, and the report waits on it.
#   usage: report-overlap.sh PROXYLOCK MANY-SITES-PROGRAM
set -u
tool=$1 prog=$2
python3 - "$tool" "$prog" <<'PY'
import ctypes, glob, json, os, signal, subprocess, sys, tempfile, time
tool, prog = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
d = tempfile.mkdtemp()
bad = 0
def start():
    p = subprocess.Popen([tool, "run", "--stats=all", "--stats=%s/r.%%p.json" % d, prog],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if p.stdout.readline() != "ready\n":
        sys.exit("not ok - many_sites did not start")
    return p
def request(pid):
    """Queue the report signal as proxylock report --json does; the pipe is never read."""
    r, w = os.pipe()
    v = (os.getpid() << 10) | w | 512
    if libc.sigqueue(pid, signal.SIGRTMAX - 2, ctypes.c_long(v)) != 0:
        sys.exit("not ok - sigqueue: errno %d" % ctypes.get_errno())
    time.sleep(0.5)  # the report has filled the pipe and waits on it
    return r, w
def report_of(pid):
    try:
        return json.load(open("%s/r.%d.json" % (d, pid)))
    except (OSError, ValueError):
        return None

# Exit while a request's report is being written.
p = start()
fds = request(p.pid)
t0 = time.monotonic()
p.stdin.close()
p.wait(timeout=30)
took = time.monotonic() - t0
j = report_of(p.pid)
if j and j.get("when") == "at exit" and took < 10:
    print("ok - exit during a report on request: the report at exit still written (exit took %.1f s)" % took)
else:
    print("not ok - exit during a report on request: report at exit %s, exit took %.1f s; files %s" %
          ("missing" if not j else j.get("when"), took, os.listdir(d)))
    bad = 1
for fd in fds:
    os.close(fd)

# Fork while a request's report is being written: the child reports at its exit.
p = start()
fds = request(p.pid)
p.stdin.write("fork\n")
p.stdin.flush()
line = p.stdout.readline()
p.stdin.close()
p.wait(timeout=30)
child = int(line.split()[1]) if line.startswith("child ") else 0
j = report_of(child)
if child and j and j.get("when") == "at exit" and j.get("pid") == child:
    print("ok - a child forked during a report on request reports at its exit")
else:
    print("not ok - fork during a report on request: %r; the child's report %s; files %s" %
          (line, "missing" if not j else j.get("when"), os.listdir(d)))
    bad = 1
for fd in fds:
    os.close(fd)
sys.exit(bad)
PY
