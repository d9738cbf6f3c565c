# plots.gp - drawn by bench/run: gnuplot -e "out='DIR'" bench/plots.gp
# The .dat files (bench/report.py): per thread count, median min max of
# each contender in the order of impls; absent contenders are NaN.
set terminal pngcairo size 1400,1000 noenhanced
impls = "glibc-normal glibc-adaptive glibc-pi proxylock-nodonate proxylock preload absl futex-ref"
n = words(impls)
# The critical sections the run measured: those with a STEM-CS.dat file.
css(stem) = system(sprintf("for c in 0 100 1000 10000; do test -s '%s/%s-'$c.dat && printf '%%s ' $c; done", out, stem))
# A contender is named in the key if its column has a number in some row.
has(f, i) = system(sprintf("awk '!/^#/ && $%d != \"NaN\" { y = 1 } END { print y + 0 }' %s", 3 * i - 1, f)) eq "1"

set output out.'/throughput.png'
set multiplot layout 2,2 title "Contended throughput (acquisitions/s): median, bars min..max, vs threads"
set logscale xy
set xtics (1, 2, 4, 8, 16)
set xrange [0.9:18]
set key bottom left
set grid
do for [cs in css("throughput")] {
	f = out.'/throughput-'.cs.'.dat'
	set title "critical section ".cs." ns"
	plot for [i=1:n] f using 1:(column(3*i-1)):(column(3*i)):(column(3*i+1)) \
		with yerrorlines title (has(f, i) ? word(impls, i) : "")
}
unset multiplot

set output out.'/wait-p99.png'
set multiplot layout 2,2 title "Contended p99 wait per acquisition (ns, lock() call): median, bars min..max, vs threads"
set key top left
do for [cs in css("wait-p99")] {
	f = out.'/wait-p99-'.cs.'.dat'
	set title "critical section ".cs." ns"
	plot for [i=1:n] f using 1:(column(3*i-1)):(column(3*i)):(column(3*i+1)) \
		with yerrorlines title (has(f, i) ? word(impls, i) : "")
}
unset multiplot

set output out.'/inversion-cdf.png'
set size 1,1
set title "Inversion: the big task's lock wait, CDF (all repetitions)"
set logscale x
unset logscale y
set xtics auto
set xlabel "wait (us)"
set ylabel "fraction of waits"
set key bottom right
files = ""
do for [i=1:n] {
	f = out.'/cdf-'.word(impls, i).'.dat'
	if (system("test -s ".f." && echo y") eq "y") { files = files." ".word(impls, i) }
}
if (strlen(files) > 0) {
	plot for [w in files] out.'/cdf-'.w.'.dat' using 1:2 with lines lw 2 title w
}
