// SPDX-License-Identifier: MIT
// cxx_locks.cpp - the C++ standard library's locks, unmodified, for the
// interposer: std::mutex, std::recursive_mutex, std::condition_variable
// (wait, wait_for on steady_clock: pthread_cond_clockwait) and
// std::shared_mutex (a glibc rwlock, left alone).  Prints "ok" when every
// count is exact.
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

static void check(bool ok, const char *what)
{
	if (!ok) {
		std::fprintf(stderr, "FAIL: %s\n", what);
		std::exit(1);
	}
}

int main()
{
	constexpr int threads = 8, iters = 100000, items = 20000;
	std::mutex m;
	std::recursive_mutex rm;
	std::shared_mutex sm;
	long counter = 0, rcounter = 0, shared_value = 0;
	std::vector<std::thread> ts;

	for (int t = 0; t < threads; t++)
		ts.emplace_back([&] {
			for (int i = 0; i < iters; i++) {
				std::lock_guard<std::mutex> g(m);
				counter++;
			}
			for (int i = 0; i < iters / 10; i++) {
				std::lock_guard<std::recursive_mutex> a(rm);
				std::lock_guard<std::recursive_mutex> b(rm);
				rcounter++;
			}
			for (int i = 0; i < iters / 10; i++) {
				if (i % 10 == 0) {
					std::unique_lock<std::shared_mutex> w(sm);
					shared_value++;
				} else {
					std::shared_lock<std::shared_mutex> r(sm);
					check(shared_value >= 0, "shared value");
				}
			}
		});
	for (auto &t : ts)
		t.join();
	check(counter == long(threads) * iters, "std::mutex count");
	check(rcounter == long(threads) * (iters / 10), "std::recursive_mutex count");
	check(shared_value == long(threads) * (iters / 100), "std::shared_mutex count");

	std::condition_variable cv;
	std::deque<int> q;
	long sum = 0;
	bool done = false;
	std::thread consumer([&] {
		std::unique_lock<std::mutex> l(m);
		for (;;) {
			if (!cv.wait_for(l, std::chrono::seconds(10), [&] { return !q.empty() || done; }))
				check(false, "condition_variable wait_for timed out");
			while (!q.empty()) {
				sum += q.front();
				q.pop_front();
			}
			if (done)
				return;
		}
	});
	for (int i = 1; i <= items; i++) {
		std::lock_guard<std::mutex> g(m);
		q.push_back(i);
		cv.notify_one();
	}
	{
		std::lock_guard<std::mutex> g(m);
		done = true;
	}
	cv.notify_all();
	consumer.join();
	check(sum == long(items) * (items + 1) / 2, "condition_variable sum");
	{
		std::unique_lock<std::mutex> l(m);
		auto t0 = std::chrono::steady_clock::now();
		check(cv.wait_for(l, std::chrono::milliseconds(20)) == std::cv_status::timeout, "timeout");
		check(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(19), "waited");
	}
	std::puts("ok");
	return 0;
}
