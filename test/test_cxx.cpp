// SPDX-License-Identifier: MIT
// test_cxx.cpp - the public header is usable from C++ (and links).
#include <thread>

#include "proxylock.h"

int main()
{
	static proxylock_mutex_t m = PROXYLOCK_MUTEX_INITIALIZER;
	long counter = 0;
	auto work = [&] {
		for (int i = 0; i < 100000; i++) {
			proxylock_mutex_lock(&m);
			counter++;
			proxylock_mutex_unlock(&m);
		}
	};
	std::thread a(work), b(work);
	a.join();
	b.join();
	return counter == 200000 ? 0 : 1;
}
