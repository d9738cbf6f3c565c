/* SPDX-License-Identifier: MIT */
/*
 * probes.h - USDT probes (provider "proxylock"), for bpftrace, perf and
 * SystemTap; docs/tracing.md lists them with a one-liner each.  Built in
 * when <sys/sdt.h> is there (Debian: systemtap-sdt-dev); a probe is one
 * nop in the slow paths until a tracer attaches, and nothing at all
 * without the header.  The uncontended paths have none.
 */
#ifndef PLK_PROBES_H
#define PLK_PROBES_H

#if defined(PLK_HAVE_SDT)
#include <sys/sdt.h>
#define PLK_PROBE3(name, a, b, c) DTRACE_PROBE3(proxylock, name, a, b, c)
#define PLK_PROBE4(name, a, b, c, d) DTRACE_PROBE4(proxylock, name, a, b, c, d)
#define PLK_PROBE6(name, a, b, c, d, e, f) DTRACE_PROBE6(proxylock, name, a, b, c, d, e, f)
#define PLK_PROBE8(name, a, b, c, d, e, f, g, h) \
	DTRACE_PROBE8(proxylock, name, a, b, c, d, e, f, g, h)
#else
/* sizeof: the arguments count as used, and nothing is evaluated. */
#define PLK_PROBE3(name, a, b, c) do { \
		(void)sizeof(a); (void)sizeof(b); (void)sizeof(c); \
	} while (0)
#define PLK_PROBE4(name, a, b, c, d) do { \
		PLK_PROBE3(name, a, b, c); (void)sizeof(d); \
	} while (0)
#define PLK_PROBE6(name, a, b, c, d, e, f) do { \
		PLK_PROBE3(name, a, b, c); PLK_PROBE3(name, d, e, f); \
	} while (0)
#define PLK_PROBE8(name, a, b, c, d, e, f, g, h) do { \
		PLK_PROBE4(name, a, b, c, d); PLK_PROBE4(name, e, f, g, h); \
	} while (0)
#endif

#endif /* PLK_PROBES_H */
