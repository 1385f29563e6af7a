#!/usr/bin/env bash
# Runs the command sets of docs/results.md, docs/rt.md and docs/locks.md and writes their JSON
# results, with the host wall time removed, into DIR (default: target/golden). Two such
# directories from two commits compare with `diff -r`: every figure must be identical unless a
# mechanism changed on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/golden}"
mkdir -p "$out"
# With the library's invariant checks on (the `checks` feature: no measurable cost), in a
# target directory of its own so that the plain release build is left alone.
cargo build --release -q -p schedkit-cli --features checks --target-dir target/checked
S=target/checked/release/schedkit
run() { # name, args...
  local name=$1; shift
  "$S" compare --quiet "$@" --json "$out/$name.raw.json" > /dev/null
  # Drop the only non-deterministic figure (sim wall time).
  sed -E 's/"wall_s": ?[0-9.e+-]+/"wall_s":0/g' "$out/$name.raw.json" > "$out/$name.json"
  rm "$out/$name.raw.json"
}
SHORT="--workload fork:mode=exit --workload fork:mode=exec --workload fork:mode=sh --workload ctx:procs=2 --workload ctx:procs=16,size=16 --duration 10s"
P=goodness,o1:era=2002,o1
run results-up   --policies $P --machine up-2002   --workload yield:instances=4 $SHORT
run results-smp2 --policies $P --machine smp2-2002 --workload yield:instances=4 $SHORT
run results-smp4 --policies $P --machine smp4-2002 --workload yield:instances=8 $SHORT
run results-smp8 --policies $P --machine smp8-2002 --workload yield:instances=16 $SHORT
CHAT="--workload chat:rooms=10,messages=1000 --workload chat:rooms=10,messages=1000,client_nice=19 --workload chat:rooms=10,messages=1000,nice=19 --duration 600s"
run results-chat-up --policies $P --machine up-2002 --workload chat:rooms=10,messages=100 --workload chat:rooms=10,messages=100,nice=19 $CHAT
run results-chat-smp --policies $P --machine smp2-2002,smp4-2002,smp8-2002 $CHAT
run rt --policies o1 --rt-balance passive,pushpull --machine smp4-2002,smp8-2002 --workload rtmigrate:threads=5 --duration 30s --audit-every 1
run locks --policies o1 --lock-mode handoff,opportunistic --machine smp2-2002,smp4-2002,smp8-2002 --workload aim7:tasks=2000 --duration 600s
echo "golden figures in $out"
