#!/bin/sh
# The USDT probes docs/tracing.md promises are in the binary: one
# stapsdt note per probe, provider "proxylock".
#   usage: check-probes.sh LIBRARY...
set -u
command -v readelf >/dev/null || { echo "SKIP: readelf missing"; exit 77; }
status=0
for lib in "$@"; do
	notes=$(readelf -n "$lib") || exit 1
	for probe in contended_acquire acquired release donate restore owner_dead; do
		if printf '%s\n' "$notes" | grep -A3 'stapsdt' | grep -q "Provider: proxylock" &&
		   printf '%s\n' "$notes" | grep -q "Name: $probe\$"; then
			echo "ok - $(basename "$lib"): proxylock:$probe"
		else
			echo "not ok - $(basename "$lib"): no USDT probe proxylock:$probe"
			status=1
		fi
	done
done
exit $status
