#!/usr/bin/env bash
# The CFS v19 report's situations (issue 13), on the report's box (athlonmp2-2007) and on this
# machine (host), under every policy that can run them. Writes each table to stdout and the
# JSON results to DIR (default: target/fair-v19). The figures in docs/fair.md come from here;
# the simulator is deterministic, so they reproduce exactly.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/fair-v19}"
mkdir -p "$out"
# With the library's invariant checks on (the `checks` feature: no measurable cost), in a
# target directory of its own so that the plain release build is left alone.
cargo build --release -q -p schedkit-cli --features checks --target-dir target/checked
S=target/checked/release/schedkit
ALL=goodness,o1,cfs:era=2.6.23,cfs,cfs:era=2.6.32,eevdf
FAIR=cfs:era=2.6.23,cfs,cfs:era=2.6.32,eevdf
M=athlonmp2-2007,host
run() { # name, args...
  local name=$1; shift
  echo "## $name"
  echo "\$ schedkit compare $*"
  "$S" compare --quiet "$@" --json "$out/$name.json"
  echo
}
# 1. 32768 nice +19 busy loops beside an audio player and a shell-like task at nice 0. The
#    player and the shell come first: they were running before the loops were started.
run loops-nice19 --policies $ALL --machine $M --duration 120s \
  --workload "audio+interactive+loops:n=32768,nice=19"
# 2. The same loops as SCHED_IDLE (2.4 and O(1) have no SCHED_IDLE and refuse the run).
run loops-idle --policies $FAIR --machine $M --duration 120s \
  --workload "audio+interactive+loops:n=32768,policy=idle"
# 3. 130 groups of 234 pipe-chained processes, and 4. a few short chains, each beside the
#    player and the shell.
run chains-130x234 --policies $ALL --machine $M --duration 30s \
  --workload "pipechain:groups=130,len=234+audio+interactive"
run chains-short --policies $ALL --machine $M --duration 30s \
  --workload "pipechain:groups=4,len=3+audio+interactive"
# 5. The report's procedure, step by step (issue 29): a nice-0 shell forks 32 640 nice +19
#    loops one after another (`nice -n 19 ./loop &`; the 32 768 pids less about 128 taken by
#    the desktop's processes, an estimate), the user's shell beside them; mpg123 (2007's,
#    through ALSA) starts at 300 s; the loops are made SCHED_IDLE at 600 s. --phases gives
#    each step its own figures. The Athlon box only, as in the report.
run procedure --policies $FAIR --machine athlonmp2-2007 --duration 900s --phases 300s,600s \
  --workload "mpg123:start=300s+interactive+loops:n=32640,nice=19,from=shell,chpolicy=600s/idle"
# The stock 2.6.20 scheduler of the box (O(1)) and 2.4 have no SCHED_IDLE: the first two steps.
run procedure-no-idle --policies goodness,o1 --machine athlonmp2-2007 --duration 600s \
  --phases 300s --workload "mpg123:start=300s+interactive+loops:n=32640,nice=19,from=shell"
