#!/usr/bin/env bash
# The BFS 0.400 experiments (issue 14, docs/bfs.md): the blog's machines under the governors
# it discussed, BFS with and without the sticky flag beside the mainline designs of its time
# (O(1)) and after (CFS, EEVDF). Writes each table to stdout and the JSON results to DIR
# (default: target/bfs-0400). The figures in docs/bfs.md come from here; the simulator is
# deterministic, so they reproduce exactly.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/bfs-0400}"
mkdir -p "$out"
# With the library's invariant checks on (the `checks` feature: no measurable cost), in a
# target directory of its own so that the plain release build is left alone.
cargo build --release -q -p schedkit-cli --features checks --target-dir target/checked
S=target/checked/release/schedkit
P=bfs,bfs:sticky=off,o1,cfs,eevdf
G=ondemand,performance
run() { # name, args...
  local name=$1; shift
  echo "## $name"
  echo "\$ schedkit compare $*"
  "$S" compare --quiet "$@" --json "$out/$name.json"
  echo
}
# 1. The blog's laptop (i7 M620, 2 cores / 4 threads): 1- and 2-thread CPU-bound jobs, also
#    under powersave, then make -j1/-j2/-j4 with the wakeup-latency probe beside it.
for n in 1 2; do
  run "i7-cpujob-$n" --policies $P --machine i7-m620 --governor $G,powersave \
    --workload "cpujob:threads=$n" --duration 400s
done
for j in 1 2 4; do
  run "i7-makej-$j" --policies $P --machine i7-m620 --governor $G \
    --workload "makej:jobs=$j,units=240+probe" --duration 600s
done
# 2. A six-core Phenom II X6 with Turbo CORE and per-core P-states: make -j1 ... -j12 with
#    the probe.
for j in 1 3 6 9 12; do
  run "phenom-makej-$j" --policies $P --machine phenom-x6 --governor $G \
    --workload "makej:jobs=$j,units=240+probe" --duration 600s
done
# 3. x264 on the quad-core Xeon X3360 (two dies, 6 MB L2 each), x264's default 1.5 x CPUs
#    frame threads, with the probe.
run "xeon-x264" --policies $P --machine xeon-x3360 --governor $G \
  --workload "x264:threads=6,frames=480+probe" --duration 600s
# 4. RT tasks among normal ones on a dual-CPU box (the blog's "BFS in real time" case): two
#    SCHED_FIFO periodic tasks and two nice-0 hogs, per-CPU designs with passive and
#    push/pull RT balancing.
run "rtmix-athlon" --policies goodness,o1,cfs,eevdf,bfs --rt-balance passive,pushpull \
  --machine athlonmp2-2007 --workload "rtmix:rt=2,normal=2,period=10ms,work=3ms" --duration 20s
# 5. The same laptop beside a desktop that is never idle (issue 29): the CPU-bound jobs and
#    make -j1/-j2/-j4 with the `desktop` background (PowerTOP's wakeup sources), under BFS with
#    and without the sticky flag and 2.6.32's CFS (the nearest era schedkit has to the 2.6.38
#    the 0.372 changelog compared against).
D=bfs,bfs:sticky=off,cfs:era=2.6.32
for n in 1 2; do
  run "i7-cpujob-$n-desktop" --policies $D --machine i7-m620 --governor $G \
    --workload "cpujob:threads=$n+desktop" --duration 400s
done
for j in 1 2 4; do
  run "i7-makej-$j-desktop" --policies $D --machine i7-m620 --governor $G \
    --workload "makej:jobs=$j,units=240+desktop" --duration 600s
done
