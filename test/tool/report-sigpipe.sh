#!/bin/sh
# Issue 34 (415adb2): a requester gone mid-report costs the rest of the
# report, never the program: `proxylock report --json PID | head -c 100`
# ends the requester with SIGPIPE while the program still writes (its
# JSON report, over 64 KiB, fills the pipe), and the SIGPIPE the
# program's write then raises is the report's, not the program's: the
# program runs on (it used to die with status 141), answers the next
# request, and exits 0.
#   usage: report-sigpipe.sh PROXYLOCK MANY-SITES-PROGRAM
set -u
tool=$1 prog=$2
python3 - "$tool" "$prog" <<'PY'
import subprocess, sys, time
tool, prog = sys.argv[1], sys.argv[2]
p = subprocess.Popen([tool, "run", "--stats", prog], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
if p.stdout.readline() != "ready\n":
    sys.exit("not ok - many_sites did not start")
bad = 0
for cmd in ("report --json %d | head -c 100", "report %d | head -n 1"):
    h = subprocess.run(["sh", "-c", ('"$0" ' + cmd) % p.pid, tool], capture_output=True,
                       text=True, timeout=60)
    time.sleep(0.5)
    if p.poll() is None and h.stdout:
        print("ok - proxylock %s: the program runs on" % (cmd % p.pid))
    else:
        print("not ok - proxylock %s: the program ended with status %s (output %r)" %
              (cmd % p.pid, p.returncode, h.stdout[:80]))
        bad = 1
        break
if not bad:
    r = subprocess.run([tool, "report", str(p.pid)], capture_output=True, text=True, timeout=60)
    p.stdin.close()
    rc = p.wait(timeout=30)
    if r.returncode == 0 and "on request" in r.stdout and rc == 0:
        print("ok - then a whole report on request, and exit status 0")
    else:
        print("not ok - after: report %d %r, exit status %s" % (r.returncode, r.stderr, rc))
        bad = 1
else:
    p.kill()
sys.exit(bad)
PY
