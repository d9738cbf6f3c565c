# TLS 1.3 handshakes between in-memory client and server objects in
# several threads of Debian's python3, on Debian's OpenSSL 3.0, whose
# provider, name and property stores are pthread rwlocks (CPython
# releases the GIL around the handshakes, so the threads meet there).
# Each connection carries a message that must arrive intact; prints
# what was negotiated.
#   usage: python3 python_tls.py CERT KEY HANDSHAKES THREADS
import ssl
import sys
import threading

cert, key, n, nthreads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
seen = [None] * nthreads


def pump(src, dst):
    data = src.read()
    if data:
        dst.write(data)


def connect(sctx, cctx, i):
    sin, sout, cin, cout = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    server = sctx.wrap_bio(sin, sout, server_side=True)
    client = cctx.wrap_bio(cin, cout, server_hostname="localhost")
    done = [False, False]
    while not all(done):
        for k, end in enumerate((client, server)):
            if not done[k]:
                try:
                    end.do_handshake()
                    done[k] = True
                except ssl.SSLWantReadError:
                    pass
        pump(cout, sin)
        pump(sout, cin)
    client.write(b"message %d" % i)
    pump(cout, sin)
    got = server.read(64)
    if got != b"message %d" % i:
        raise SystemExit("connection %d: got %r" % (i, got))
    return client.version(), client.cipher()[0], server.version()


def work(t):
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(cert, key)
    cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cctx.load_verify_locations(cert)
    seen[t] = {connect(sctx, cctx, i) for i in range(n)}


threads = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
for th in threads:
    th.start()
for th in threads:
    th.join()
if None in seen:
    raise SystemExit("a thread failed")
print("tls ok: %d handshakes in %d threads, each message intact" % (n * nthreads, nthreads))
for v in sorted(set().union(*seen)):
    print("negotiated:", *v)
