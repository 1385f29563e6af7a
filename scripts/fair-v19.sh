#!/usr/bin/env bash
# The CFS v19 report's situations (issue 13), on the report's box (athlonmp2-2007) and on this
# machine (host), under every policy that can run them. Writes each table to stdout and the
# JSON results to DIR (default: target/fair-v19). The figures in docs/fair.md come from here;
# the simulator is deterministic, so they reproduce exactly.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/fair-v19}"
mkdir -p "$out"
cargo build --release -q -p schedkit-cli
S=target/release/schedkit
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
