# gnuplot -e "bars='..'; scale='..'; out='..'; ncols=N; names='husk crun runc'; floor=MS" chart.gp
# Left: median latency per operation and runtime. Right: create latency
# as the number of existing containers grows (median per bin of 25).
set terminal pngcairo size 1400,560 font "sans,11"
set output out
set termoption noenhanced  # runtime and test names are plain text
set multiplot layout 1,2

set title "Median latency (ms, lower is better)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set ylabel "ms"
set yrange [0:*]
set grid ytics
set key top right
if (floor == floor) {
  set arrow from graph 0, first floor to graph 1, first floor nohead dt 2 lc rgb "#555555"
}
# The floor line is drawn by the arrow above; NaN only gives it a key entry.
plot for [i=2:ncols+1] bars using i:xtic(1) title columnheader(i), \
     NaN with lines dt 2 lc rgb "#555555" title (floor == floor ? sprintf("floor (unshare+pivot_root) %.1f ms", floor) : "")

unset arrow
unset label
set title "create latency vs existing containers"
set style data linespoints
set xlabel "containers already in the state dir"
set ylabel "ms"
set yrange [0:*]
set key top left
plot for [i=0:ncols-1] scale index i using 1:2 with linespoints pt 7 ps 0.6 title word(names, i+1)
unset multiplot
