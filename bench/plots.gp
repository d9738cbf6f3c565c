# plots.gp - drawn by bench/run: gnuplot -e "out='DIR'" bench/plots.gp
set terminal pngcairo size 1400,1000 noenhanced
impls = "glibc-normal glibc-adaptive glibc-pi proxylock-nodonate proxylock preload"

set output out.'/throughput.png'
set multiplot layout 2,2 title "Contended throughput (acquisitions/s, median of 5) vs threads"
set logscale xy
set xtics (1, 2, 4, 8, 16)
set xrange [0.9:18]
set key bottom left
set grid
do for [cs in "0 100 1000 10000"] {
	set title "critical section ".cs." ns"
	plot for [i=1:6] out.'/throughput-'.cs.'.dat' using 1:(column(i+1)) with linespoints title word(impls, i)
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
do for [i=1:6] {
	f = out.'/cdf-'.word(impls, i).'.dat'
	if (system("test -s ".f." && echo y") eq "y") { files = files." ".word(impls, i) }
}
plot for [n in files] out.'/cdf-'.n.'.dat' using 1:2 with lines lw 2 title n
