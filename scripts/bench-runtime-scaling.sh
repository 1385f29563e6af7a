#!/usr/bin/env bash
# The runtime's scaling set on a many-core machine (issue 30, item 6): the machine's facts, the
# server workload with 8 workers (so the load generator has cores of its own), every default
# workload at 16 workers, and yield/pingpong/chat/lock at 1, 2, 4 and 8 workers. Each step
# writes its table and JSON under OUTDIR as soon as it ends, so a run cut short keeps what it
# measured, and each step has a time limit (a hung run is cut, rc=124).
#
#   bash scripts/bench-runtime-scaling.sh [SCHEDKIT] [OUTDIR] [DURATION]
#
# SCHEDKIT defaults to target/release/schedkit (build it with `cargo build --release -p
# schedkit-cli`), OUTDIR to bench-out, DURATION (each time-based figure) to 300ms. Without Go
# on the machine, SCHEDKIT_GO_PEER=PATH names a Go peer built elsewhere (see
# crates/schedkit-cli/src/rtbench/peers/go.rs).
set -uo pipefail
SCHEDKIT=${1:-target/release/schedkit}
OUT=${2:-bench-out}
DUR=${3:-300ms}
mkdir -p "$OUT"
[ -x "$SCHEDKIT" ] || { echo "no schedkit binary at $SCHEDKIT" >&2; exit 2; }
{
  date -u; uname -a; nproc
  lscpu 2>/dev/null
  cat /sys/devices/system/cpu/cpufreq/policy0/scaling_governor 2>/dev/null
  cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null
} > "$OUT/machine.txt" 2>&1
ncpu=$(nproc)
runners=schedkit,os-threads,tokio
# Go: a toolchain on the PATH, or a peer built elsewhere named by SCHEDKIT_GO_PEER.
if command -v go >/dev/null || [ -n "${SCHEDKIT_GO_PEER:-}" ]; then runners=$runners,go; fi
step() { # name, time limit in s, args...
  local name=$1 limit=$2; shift 2
  echo "== $name: schedkit bench runtime $*" | tee -a "$OUT/log.txt"
  local t0=$SECONDS
  RUST_BACKTRACE=1 timeout "$limit" "$SCHEDKIT" bench runtime --runners "$runners" --duration "$DUR" --json "$OUT/$name.json" "$@" \
    > "$OUT/$name.txt" 2>&1
  echo "   rc=$? in $((SECONDS - t0)) s" | tee -a "$OUT/log.txt"
}
server_cpus=$(( ncpu >= 16 ? 8 : (ncpu / 2 > 0 ? ncpu / 2 : 1) ))
step server-$server_cpus 150 --workloads server --cpus "$server_cpus"
step all-$ncpu 200 --cpus "$ncpu"
for n in 1 2 4 8; do
  [ "$n" -le "$ncpu" ] || continue
  step scaling-$n 60 --workloads yield,pingpong,chat,lock --cpus "$n"
done
