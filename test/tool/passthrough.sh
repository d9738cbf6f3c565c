#!/bin/sh
# The program keeps its PID, exit status, signals and stdio: proxylock
# execs it in its own place.
#   usage: passthrough.sh PROXYLOCK
set -eu
tool=$1
"$tool" run sh -c 'exit 7' && rc=0 || rc=$?
[ "$rc" -eq 7 ] || { echo "not ok - exit status 7 came back as $rc"; exit 1; }
echo "ok - exit status 7 passes through"
out=$(printf 'hello\nworld\n' | "$tool" run --stats=/dev/null cat)
[ "$out" = "hello
world" ] || { echo "not ok - stdin to stdout: '$out'"; exit 1; }
err=$("$tool" run sh -c 'echo to-stderr >&2' 2>&1 >/dev/null)
[ "$err" = "to-stderr" ] || { echo "not ok - stderr: '$err'"; exit 1; }
echo "ok - stdin, stdout and stderr are the program's"
python3 - "$tool" <<'PY'
import signal, subprocess, sys, time
tool = sys.argv[1]
# The signal the program raises on itself is its death, as seen by our parent.
r = subprocess.run([tool, "run", "sh", "-c", "kill -TERM $$"])
assert r.returncode == -signal.SIGTERM, "killed by SIGTERM came back as %d" % r.returncode
# A signal sent to the PID we started reaches the program: same process.
p = subprocess.Popen([tool, "run", "sh", "-c", "echo $$; exec sleep 30"], stdout=subprocess.PIPE)
pid = int(p.stdout.readline())
assert pid == p.pid, "the program runs as PID %d, not %d: not exec'd" % (pid, p.pid)
time.sleep(0.2)
p.send_signal(signal.SIGINT)
assert p.wait(timeout=10) == -signal.SIGINT, "SIGINT came back as %d" % p.returncode
print("ok - the program runs as the same PID; SIGTERM raised and SIGINT sent both pass through")
PY
