# 16 threads hammering threading.Lock, Condition and queue.Queue; CPython's
# GIL is a pthread mutex plus a condvar, so under the interposer every
# thread switch goes through proxylock.  Prints "ok N" with the exact count.
import queue
import threading

THREADS, ITERS, ITEMS = 16, 20000, 2000
lock = threading.Lock()
cond = threading.Condition()
q = queue.Queue(maxsize=8)
count = [0]
ready = [0]

def hammer():
    for _ in range(ITERS):
        with lock:
            count[0] += 1
    with cond:
        ready[0] += 1
        cond.notify_all()
        while ready[0] < THREADS:
            cond.wait()
    for i in range(ITEMS):
        q.put(i)

def drain():
    for _ in range(ITEMS):
        q.get()
        q.task_done()

threads = [threading.Thread(target=hammer) for _ in range(THREADS)]
threads += [threading.Thread(target=drain) for _ in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
q.join()
assert count[0] == THREADS * ITERS, count[0]
print("ok", count[0])
