#!/bin/sh
# The emulated big.LITTLE machine's device tree: QEMU's own for
#   -M virt -cpu cortex-a57 -smp 4 -m $MEM
# (boot with exactly these options), with capacity-dmips-mhz 1024 on
# cpu@0, cpu@1 (big) and 400 on cpu@2, cpu@3 (little), and /cpus/cpu-map
# rewritten into two clusters (cpu0, cpu1 | cpu2, cpu3): the guest's
# cpu_capacity reads 1024, 1024, 400, 400 and its scheduler domains carry
# SD_ASYM_CPUCAPACITY.  For energy-aware scheduling each CPU also gets a
# clock (a fixed 1 GHz clock: one OPP per cluster, so nothing ever changes
# frequency), an OPP table shared by its cluster (the generic cpufreq-dt
# driver gives each cluster a policy, governed by schedutil) and a
# dynamic-power-coefficient (400 big, 100 little) from which the kernel
# builds the energy model: little CPUs cost less energy per unit of work.
#   usage: make-dtb.sh OUT.dtb [MEM]
set -eu
out=$1
mem=${2:-512M}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
qemu-system-aarch64 -M virt,dumpdtb="$tmp/virt.dtb" -cpu cortex-a57 -smp 4 -m "$mem" \
	-nographic >/dev/null 2>&1
dtc -q -I dtb -O dts -o "$tmp/virt.dts" "$tmp/virt.dtb"
python3 - "$tmp/virt.dts" "$tmp/bl.dts" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
caps = {0: 1024, 1: 1024, 2: 400, 3: 400}
power = {0: 400, 1: 400, 2: 100, 3: 100}
opp = {0: 'opp_big', 1: 'opp_big', 2: 'opp_little', 3: 'opp_little'}
phandle = {}
for cpu, cap in caps.items():
    m = re.search(r'(\n\t\tcpu@%d \{\n)(.*?)(\n\t\t\};)' % cpu, src, re.S)
    if not m:
        sys.exit("make-dtb: no cpu@%d in QEMU's device tree" % cpu)
    phandle[cpu] = re.search(r'phandle = <(0x[0-9a-f]+)>', m.group(2)).group(1)
    body = m.group(2) + '\n\t\t\tcapacity-dmips-mhz = <%d>;' % cap
    body += '\n\t\t\tclocks = <&cpu_clk>;\n\t\t\toperating-points-v2 = <&%s>;' % opp[cpu]
    body += '\n\t\t\tdynamic-power-coefficient = <%d>;' % power[cpu]
    src = src[:m.start()] + m.group(1) + body + m.group(3) + src[m.end():]
core = lambda i, c: '\t\t\t\t\tcore%d {\n\t\t\t\t\t\tcpu = <%s>;\n\t\t\t\t\t};\n' % (i, phandle[c])
cmap = ('\t\tcpu-map {\n\t\t\tsocket0 {\n'
        '\t\t\t\tcluster0 {\n' + core(0, 0) + core(1, 1) + '\t\t\t\t};\n'
        '\t\t\t\tcluster1 {\n' + core(0, 2) + core(1, 3) + '\t\t\t\t};\n'
        '\t\t\t};\n\t\t};\n')
src, n = re.subn(r'\t\tcpu-map \{\n.*?\n\t\t\};\n', lambda m: cmap, src, count=1, flags=re.S)
if n != 1:
    sys.exit("make-dtb: no cpu-map in QEMU's device tree")
def table(label, uv):
    return ('\t%s: opp-table-%s {\n\t\tcompatible = "operating-points-v2";\n\t\topp-shared;\n'
            '\t\topp-1000000000 {\n\t\t\topp-hz = /bits/ 64 <1000000000>;\n'
            '\t\t\topp-microvolt = <%d>;\n\t\t};\n\t};\n' % (label, label[4:], uv))
extra = ('\tcpu_clk: cpu-clock {\n\t\tcompatible = "fixed-clock";\n\t\t#clock-cells = <0>;\n'
         '\t\tclock-frequency = <1000000000>;\n\t};\n' + table('opp_big', 1000000) +
         table('opp_little', 800000))
src, n = re.subn(r'\n\tcpus \{\n', lambda m: '\n' + extra + '\n\tcpus {\n', src, count=1)
if n != 1:
    sys.exit("make-dtb: no /cpus in QEMU's device tree")
open(sys.argv[2], 'w').write(src)
PY
dtc -q -I dts -O dtb -o "$out" "$tmp/bl.dts"
