#!/usr/bin/env bash
# Records a scheduler trace of a command with tracefs, the way ../shared/reference/machine-facts.md
# says works on the project VM (`trace-cmd record` is refused there): enable the sched events,
# run the command, stop, copy the buffer. Restores the tracing settings afterwards. Needs root.
#
#   scripts/record-trace.sh OUT.txt [--dat OUT.dat] -- perf bench sched messaging -g 1 -l 20 -p
#
# OUT.txt is raw tracefs text (/sys/kernel/tracing/trace). With --dat, also `trace-cmd extract`
# into OUT.dat (then `trace-cmd report -i OUT.dat` and `-N`, `-R` give the other text forms).
set -euo pipefail
out=${1:?usage: record-trace.sh OUT.txt [--dat OUT.dat] -- COMMAND...}; shift
dat=""
if [[ ${1:-} == --dat ]]; then dat=$2; shift 2; fi
[[ ${1:-} == -- ]] && shift
T=/sys/kernel/tracing
[[ -d $T/events ]] || mount -t tracefs nodev $T
events=(sched_switch sched_waking sched_wakeup sched_wakeup_new sched_migrate_task
        sched_process_fork sched_process_exit)
old_size=$(cat $T/buffer_size_kb | cut -d' ' -f1)
restore() {
  echo 0 > $T/tracing_on
  for e in "${events[@]}"; do echo 0 > $T/events/sched/$e/enable; done
  echo "$old_size" > $T/buffer_size_kb
}
trap restore EXIT
echo 0 > $T/tracing_on
echo 16384 > $T/buffer_size_kb
echo > $T/trace
for e in "${events[@]}"; do echo 1 > $T/events/sched/$e/enable; done
echo 1 > $T/tracing_on
"$@" > /dev/null
echo 0 > $T/tracing_on
cat $T/trace > "$out"
if [[ -n $dat ]]; then trace-cmd extract -o "$dat" > /dev/null; fi
echo "recorded $(grep -vc '^#' "$out") events into $out" >&2
