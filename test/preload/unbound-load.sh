#!/bin/sh
# rw-real.sh's workload: unbound (2 threads; its local zones, caches and
# their entries are lock_rw_t, pthread rwlocks) run as $PLK_RUN unbound on
# a free loopback port, answering 200 local-data names to dnsperf (2
# threads, 3 s) while unbound-control adds and removes 100 more names
# over and over: each change write-locks the zones that every query
# read-locks.  Then it answers each name once (compared with what
# local-data says) and lists its local data for test.
#   usage: unbound-load.sh
set -eu
for p in unbound unbound-control dnsperf python3; do
	command -v "$p" >/dev/null 2>&1 ||
		PATH=$PATH:/usr/sbin command -v "$p" >/dev/null 2>&1 ||
		{ echo "SKIP: $p is not installed"; exit 77; }
done
PATH=$PATH:/usr/sbin
d=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$d"' EXIT
port=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
i=0
while [ $i -lt 200 ]; do
	echo "  local-data: \"h$i.test. 3600 IN A 10.0.$((i / 256)).$((i % 256))\"" >>"$d/local"
	echo "h$i.test A" >>"$d/queries"
	if [ $i -lt 100 ]; then
		echo "x$i.test. 60 IN A 10.1.0.$i" >>"$d/extra"
		echo "x$i.test." >>"$d/extra-names"
	fi
	i=$((i + 1))
done
cat >"$d/unbound.conf" <<END
server:
  interface: 127.0.0.1
  port: $port
  num-threads: 2
  do-ip6: no
  do-tcp: no
  do-daemonize: no
  chroot: ""
  username: ""
  directory: "$d"
  pidfile: ""
  use-syslog: no
  logfile: ""
  verbosity: 0
  module-config: "iterator"
  local-zone: "test." static
$(cat "$d/local")
remote-control:
  control-enable: yes
  control-interface: $d/ctl.sock
  control-use-cert: no
END
ctl() { unbound-control -c "$d/unbound.conf" "$@"; }
$PLK_RUN unbound -c "$d/unbound.conf" &
pid=$!
tries=0
until ctl status >/dev/null 2>&1; do
	tries=$((tries + 1))
	[ $tries -lt $((100 * ${PLK_STRESS_SLACK:-1})) ] || { echo "unbound did not start" >&2; exit 1; }
	kill -0 "$pid" || { echo "unbound exited" >&2; exit 1; }
	sleep 0.1
done
dnsperf -s 127.0.0.1 -p "$port" -d "$d/queries" -l 3 -c 4 -T 2 >"$d/dnsperf" 2>&1 &
perf=$!
# Changes for as long as the queries come (at least 3 rounds).
round=0
while [ $round -lt 3 ] || kill -0 $perf 2>/dev/null; do
	ctl local_datas <"$d/extra" >/dev/null
	ctl local_datas_remove <"$d/extra-names" >/dev/null
	round=$((round + 1))
done
wait $perf || { cat "$d/dnsperf" >&2; echo "dnsperf failed" >&2; exit 1; }
sent=$(sed -n 's/^ *Queries sent: *\([0-9]*\).*/\1/p' "$d/dnsperf")
grep -q "Queries lost: *0 " "$d/dnsperf" && grep -q "NOERROR $sent " "$d/dnsperf" ||
	{ cat "$d/dnsperf" >&2; echo "dnsperf: queries lost or failed" >&2; exit 1; }
echo "dnsperf: every query answered NOERROR"
ctl local_datas <"$d/extra" >/dev/null
# Each name once, its answer against local-data.
python3 - "$port" "$d/unbound.conf" "$d/extra" <<'PY'
import re, socket, struct, sys
port = int(sys.argv[1])
want = dict(re.findall(r'([a-z0-9.]+)\. \d+ IN A ([0-9.]+)', open(sys.argv[2]).read() + open(sys.argv[3]).read()))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
for qid, (name, addr) in enumerate(sorted(want.items())):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0\0\1\0\1"
    s.sendto(q, ("127.0.0.1", port))
    r = s.recv(512)
    got = socket.inet_ntoa(r[-4:])
    rid, flags, _, ancount = struct.unpack(">HHHH", r[:8])
    if rid != qid or flags & 0xf or ancount != 1 or got != addr:
        sys.exit("%s: answered %s, local-data says %s" % (name, r.hex(), addr))
print("answers: %d names, each as local-data says" % len(want))
PY
ctl list_local_data | grep '\.test\.' | sort
ctl stop >/dev/null
wait $pid
pid=
