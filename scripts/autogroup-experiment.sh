#!/usr/bin/env bash
# The autogroup experiment of docs/validation.md: does the kernel's autogroup (all of a
# session's tasks as one group entity in the root runqueue, which schedkit's flat hierarchy does
# not model) decide how many switches and wakeups a message-passing benchmark makes?
#
# Records the same command PAIRS times with /proc/sys/kernel/sched_autogroup_enabled at 1 and
# PAIRS times at 0, alternating (1, 0, 1, 0, ...) so that both see the same drift of the machine,
# with scripts/record-trace.sh. Replays each recording under eevdf:era=6.18 on host and prints one
# markdown row per recording: autogroup, the recorded switches, wakeups and busy CPU time, the
# replayed switches and wakeups, the ratio, and how often the recorded kernel switched a waker out
# for the task it had just woken on its own CPU (a sched_switch with prev_state R from the waker
# to its wakee within 50 us of the sched_waking on that CPU). Puts the autogroup setting back afterwards.
# Needs root and tracefs.
#
#   sudo scripts/autogroup-experiment.sh [--pairs N] [--out DIR] [-- COMMAND...]
#
#   --pairs N   recordings per setting (default 5)
#   --out DIR   where the traces go (default target/autogroup-experiment)
#   COMMAND     default: hackbench -p -g 2 -l 100 (the suite's hackbench-pipe-g2)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=5
out=target/autogroup-experiment
while [[ $# -gt 0 ]]; do
  case $1 in
    --pairs) pairs=${2:?--pairs needs a count}; shift 2
      [[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "autogroup-experiment.sh: --pairs $pairs: not a positive count" >&2; exit 2; } ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,/^set /{/^#/p}' "$0"; exit 0 ;;
    --) shift; break ;;
    *) echo "autogroup-experiment.sh: unknown argument $1 (the command goes after --)" >&2; exit 2 ;;
  esac
done
cmd=("$@")
[[ ${#cmd[@]} -gt 0 ]] || cmd=(hackbench -p -g 2 -l 100)
knob=/proc/sys/kernel/sched_autogroup_enabled
[[ -w $knob ]] || { echo "autogroup-experiment.sh: cannot write $knob (needs root and CONFIG_SCHED_AUTOGROUP)" >&2; exit 1; }
was=$(cat "$knob")
trap 'echo "$was" > "$knob"' EXIT
mkdir -p "$out"
cargo build --release -q -p schedkit-cli
S=target/release/schedkit
echo "| recording | autogroup | recorded switches | wakeups | busy CPU (ms) | replayed switches | wakeups | replayed ÷ recorded switches | wakee preempts waker |"
echo "|---|---|---|---|---|---|---|---|---|"
for i in $(seq 1 "$pairs"); do
  for ag in 1 0; do
    echo "$ag" > "$knob"
    trace=$out/ag$ag.$i.txt
    bash scripts/record-trace.sh "$trace" -- "${cmd[@]}" > "$out/ag$ag.$i.out" 2>&1
    echo "$was" > "$knob"
    preempts=$(awk '
      # tracefs text: COMM-PID [CPU] FLAGS TIMESTAMP: EVENT: FIELDS
      match($0, /-[0-9]+ +\[[0-9]+\]/) {
        head = substr($0, RSTART + 1, RLENGTH - 1); split(head, h, /[ \[\]]+/); pid = h[1]; cpu = h[2]
        for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = substr($i, 1, length($i) - 1); ev = $(i + 1) }
        if (ev == "sched_waking:") {
          for (i = 1; i <= NF; i++) if ($i ~ /^pid=/) { wt[cpu] = ts; wr[cpu] = pid; we[cpu] = substr($i, 5) }
        } else if (ev == "sched_switch:") {
          for (i = 1; i <= NF; i++) {
            if ($i ~ /^prev_pid=/) pp = substr($i, 10)
            if ($i ~ /^prev_state=/) ps = substr($i, 12)
            if ($i ~ /^next_pid=/) np = substr($i, 10)
          }
          if (ps ~ /^R/ && wr[cpu] == pp && we[cpu] == np && ts - wt[cpu] < 50e-6) n++
        }
      }
      END { print n + 0 }' "$trace")
    "$S" replay --policies recorded,eevdf:era=6.18 "$trace" 2>/dev/null | awk -v name="ag$ag.$i" -v ag="$ag" -v pre="$preempts" '
      /^context switches/ { rs = $3; ps = $4 }
      /^wakeups/ { rw = $2; pw = $3 }
      /^busy CPU time/ { b = $5 * 1000 }
      END { printf "| %s | %s | %d | %d | %.0f | %d | %d | %.2f | %d |\n", name, (ag ? "on" : "off"), rs, rw, b, ps, pw, ps / rs, pre }'
  done
done
