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
events=(sched/sched_switch sched/sched_waking sched/sched_wakeup sched/sched_wakeup_new
        sched/sched_migrate_task sched/sched_process_fork sched/sched_process_exit)
# A task's own sched_setscheduler(): a trace's `prio` cannot tell SCHED_IDLE or SCHED_BATCH
# from nice 0, and the replay sets the policy where the task did (needs CONFIG_FTRACE_SYSCALLS;
# without it the events are not there and the replay runs such tasks as SCHED_NORMAL).
for e in syscalls/sys_enter_sched_setscheduler syscalls/sys_exit_sched_setscheduler; do
  [[ -d $T/events/$e ]] && events+=("$e")
done
old_size=$(cat $T/buffer_size_kb | cut -d' ' -f1)
restore() {
  echo 0 > $T/tracing_on
  for e in "${events[@]}"; do echo 0 > $T/events/$e/enable; done
  echo "$old_size" > $T/buffer_size_kb
}
trap restore EXIT
echo 0 > $T/tracing_on
echo 16384 > $T/buffer_size_kb
echo > $T/trace
for e in "${events[@]}"; do echo 1 > $T/events/$e/enable; done
echo 1 > $T/tracing_on
"$@" > /dev/null
echo 0 > $T/tracing_on
cat $T/trace > "$out"
if [[ -n $dat ]]; then trace-cmd extract -o "$dat" > /dev/null; fi
echo "recorded $(grep -vc '^#' "$out") events into $out" >&2
