#!/bin/sh
# Boot the uclamp test kernel under qemu with a statically linked test
# program as /init, and turn the guest's serial output into a verdict.
#   usage: run-vm.sh GUEST-BINARY [PROXYLOCK-STATIC [PRELOAD-LIB PRELOAD-TEST]]
# With PROXYLOCK-STATIC, the guest also runs `proxylock caps` (as
# /bin/proxylock), which must say uclamp is there.  With PRELOAD-LIB (the
# interposer) and PRELOAD-TEST (test_preload_wakers, dynamic), the guest
# runs that test's uclamp case under LD_PRELOAD (semaphores lend uclamp:
# only the interposer has them); their shared libraries go into the
# initramfs at the paths the host's ldd names.
# Exit: 0 all passed; 1 a test failed; 77 (meson's skip) when the kernel
# cannot be built or the guest does not boot: said loudly, never a pass.
# PROXYLOCK_VM_KVM=1 tries KVM first (it hangs on this machine kind, a
# guest itself, so TCG is the default).  PROXYLOCK_VM_APPEND adds words
# to the guest kernel's command line; the kernel hands NAME=VALUE words
# it does not know to /init as its environment, so
# PROXYLOCK_VM_APPEND=PROXYLOCK_DONATE=none runs the suite with donation
# off (its donation cases must then fail).
set -u
here=$(cd "$(dirname "$0")" && pwd)
guest=$1
tool=${2:-}
preload_lib=${3:-}
preload_test=${4:-}
skip() { echo "=== VM SUITE SKIPPED: $* ===" >&2; exit 77; }

command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 missing (apt-get install qemu-system-x86)"
command -v cpio >/dev/null || skip "cpio missing (apt-get install cpio)"
kernel=$("$here/build-kernel.sh") || skip "the uclamp kernel could not be built"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root/proc" "$work/root/sys" "$work/root/dev" "$work/root/tmp"
cp "$guest" "$work/root/init"
if [ -n "$tool" ]; then
	mkdir -p "$work/root/bin"
	cp "$tool" "$work/root/bin/proxylock"
fi
if [ -n "$preload_test" ]; then
	mkdir -p "$work/root/b"
	cp "$preload_lib" "$work/root/b/libproxylock-preload.so"
	cp "$preload_test" "$work/root/b/test_preload_wakers"
	for lib in $(ldd "$preload_lib" "$preload_test" | sed -n 's|.*[[:space:]]\(/[^ ]*\) (0x.*|\1|p' | sort -u); do
		mkdir -p "$work/root$(dirname "$lib")"
		cp -L "$lib" "$work/root$lib"
	done
fi
(cd "$work/root" && find . | cpio -H newc -o --quiet | gzip -1) > "$work/init.cpio.gz"

boot() {
	timeout "$2" qemu-system-x86_64 $1 -smp 4 -m 256M -kernel "$kernel" \
		-initrd "$work/init.cpio.gz" -nographic -no-reboot \
		-append "console=ttyS0 panic=-1 quiet ${PROXYLOCK_VM_APPEND:-}" > "$work/serial.log" 2>&1
}
if [ "${PROXYLOCK_VM_KVM:-0}" = 1 ] && [ -w /dev/kvm ] && boot "-enable-kvm -cpu host" 60 &&
   grep -q 'PROXYLOCK-VM: DONE' "$work/serial.log"; then
	echo "vm: booted with KVM"
else
	boot "-accel tcg" 300
fi
tr -d '\r' < "$work/serial.log" > "$work/serial.txt"
grep -E 'PROXYLOCK-VM|:[PFE]:|Checks:' "$work/serial.txt" || true
grep -q 'PROXYLOCK-VM: BOOTED' "$work/serial.log" || {
	tail -20 "$work/serial.log" >&2
	# The kernel ran our init and it died first: ours to fix, not a
	# guest that cannot boot here (a static init that exited in a
	# library constructor once hid behind this skip).
	if grep -q 'Attempted to kill init' "$work/serial.log"; then
		echo "vm: the guest booted, but its init (the static test) died before it started" >&2
		exit 1
	fi
	skip "the guest did not boot"
}
if [ -n "$tool" ]; then
	sed -n '/PROXYLOCK-VM: CAPS BEGIN/,/PROXYLOCK-VM: CAPS END/p' "$work/serial.txt" > "$work/caps.txt"
	cat "$work/caps.txt"
	if grep -Eq '^uclamp: +yes ' "$work/caps.txt" &&
	   grep -q 'PROXYLOCK-VM: CAPS END status=0' "$work/caps.txt"; then
		echo "vm: proxylock caps in the guest says uclamp is there"
	else
		echo "vm: proxylock caps in the guest does not say uclamp: yes (status 0)" >&2
		exit 1
	fi
fi
if [ -n "$preload_test" ]; then
	# Ran, and ran cases (a CK_RUN_CASE that names none runs nothing, and passes).
	if grep -q 'PROXYLOCK-VM: PRELOAD END status=0' "$work/serial.txt" &&
	   sed -n '/PROXYLOCK-VM: PRELOAD BEGIN/,/PROXYLOCK-VM: PRELOAD END/p' "$work/serial.txt" |
		grep -q 'Checks: [1-9][0-9]*, Failures: 0'; then
		echo "vm: the semaphore cases passed under the interposer in the guest"
	else
		echo "vm: the semaphore cases under the interposer did not pass in the guest" >&2
		exit 1
	fi
fi
grep -q 'PROXYLOCK-VM: DONE failed=0' "$work/serial.log" && exit 0
echo "vm: uclamp suite FAILED in the guest" >&2
exit 1
