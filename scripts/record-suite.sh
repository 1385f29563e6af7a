#!/usr/bin/env bash
# Records schedkit's validation suite of real scheduler traces (docs/traces.md): each workload
# is recorded alone with scripts/record-trace.sh (tracefs sched events, settings restored
# afterwards) into OUTDIR/<name>.txt, gzipped (gzip -9); the benchmark's own stdout+stderr goes
# to OUTDIR/<name>.out; OUTDIR/suite.toml describes the recording kernel and every workload.
# Needs root and Linux with tracefs.
#
#   sudo scripts/record-suite.sh [--holdout] [--only NAME]... [--list] [OUTDIR]
#
#   OUTDIR      default traces/validation (traces/holdout with --holdout)
#   --holdout   record the holdout set (workloads kept out of the validation suite)
#   --only NAME record only this workload (repeatable); suite.toml is rewritten from every
#               workload of the set whose trace is present in OUTDIR
#   --list      print the set's workloads and exit
#   --toml-only rewrite OUTDIR/suite.toml from the traces and outputs present, record nothing
#   --repeats N also record each workload N more times into OUTDIR/repeats/<name>.<i>.txt.gz
#               (with its .out): `schedkit validate` measures them for the kernel's own spread
#               of each figure from run to run (they are not replayed)
#   --repeats-only
#               record only the repeats, keeping the workloads' traces as they are
#
# Environment:
#   MACHINE=host      the schedkit machine profile written into suite.toml
#   QUIET_WAIT_S=600  before each recording, wait up to this long (polling every 10 s) until no
#                     rustc/cargo/cc1/ld of others runs and the CPUs are at most 10% busy;
#                     0 skips the wait
#   RETRIES=3         recordings of a workload at most, when others' tasks ran in the window
#   SCHBENCH=PATH     a built schbench; otherwise one in PATH, otherwise
#                     github.com/masoncl/schbench is cloned and built in a temporary directory
#
# Shared-machine protocol (the project VM): the tracefs use is serialised with an exclusive
# flock on /tmp/schedkit-tracefs.lock, and /tmp/schedkit-recording-now exists while recording
# (others wait while it does).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
src=$repo/traces/validation/src
set_name=validation
only=()
outdir=""
list=0
toml_only=0
repeats=0
repeats_only=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --repeats) repeats=${2:?--repeats needs a count}; shift 2
      [[ $repeats =~ ^[0-9]+$ ]] || { echo "record-suite.sh: --repeats $repeats: not a count" >&2; exit 2; } ;;
    --repeats-only) repeats_only=1; shift ;;
    --holdout) set_name=holdout; shift ;;
    --only) only+=("${2:?--only needs a workload name}"); shift 2 ;;
    --list) list=1; shift ;;
    --toml-only) toml_only=1; shift ;;
    -h|--help) sed -n '2,/^set /{/^#/p}' "$0"; exit 0 ;;
    -*) echo "record-suite.sh: unknown option $1" >&2; exit 2 ;;
    *) outdir=$1; shift ;;
  esac
done
outdir=${outdir:-$repo/traces/$set_name}
# Absolute: each workload runs in its own working directory (below), where a relative OUTDIR
# would name another place.
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
MACHINE=${MACHINE:-host}
QUIET_WAIT_S=${QUIET_WAIT_S:-600}
RETRIES=${RETRIES:-3}
SCHBENCH_COMMIT=24e32b8

# ---- the workloads ------------------------------------------------------------------------
# name | setup (run before tracing, not traced) | command (bash; $BIN: our programs, $PROJ: the
# generated C project, $SCHBENCH) | schedkit model (built-in workload spec, or empty) | note
validation=(
  "pipe||perf bench sched pipe -l 5000||perf bench sched pipe: 2 processes, 5000 round trips over 2 pipes (ctx:procs=2 is the shape but has no loop count)"
  "messaging-proc||perf bench sched messaging -g 2 -l 100|hackbench:groups=2,fds=20,loops=100,mode=socket|perf bench sched messaging: 2 groups x 20 senders/20 receivers, processes, socketpairs, 100 loops"
  "messaging-thread||perf bench sched messaging -g 2 -l 100 -t|hackbench:groups=2,fds=20,loops=100,mode=socket,threads=1|as messaging-proc with threads"
  "hackbench-pipe-g2||hackbench -p -g 2 -l 100|hackbench:groups=2,fds=20,loops=100,mode=pipe|rt-tests hackbench: 2 groups, pipes, processes, 100 loops"
  "hackbench-sock-g2||hackbench -g 2 -l 200|hackbench:groups=2,fds=20,loops=200,mode=socket|rt-tests hackbench: 2 groups, socketpairs, processes, 200 loops"
  "hackbench-pipe-g8||hackbench -p -g 8 -l 40|hackbench:groups=8,fds=20,loops=40,mode=pipe|rt-tests hackbench: 8 groups, pipes, processes, 40 loops"
  "hackbench-sock-g8||hackbench -g 8 -l 30|hackbench:groups=8,fds=20,loops=30,mode=socket|rt-tests hackbench: 8 groups, socketpairs, processes, 30 loops"
  "hackbench-thread-sock-g2||hackbench -T -g 2 -l 150|hackbench:groups=2,fds=20,loops=150,mode=socket,threads=1|rt-tests hackbench: 2 groups, socketpairs, threads, 150 loops"
  "schbench||\$SCHBENCH -m 2 -t 2 -r 1||schbench (masoncl, $SCHBENCH_COMMIT): 2 message threads x 2 workers, 1 s, defaults otherwise (usleep 100 us + 5 matrix passes over 256 KB per request under a per-CPU lock); the built-in schbench models the 2016 design (cputime/sleep), not this one"
  "make-j2|make -s -C \$PROJ clean|TIMEFORMAT='record-suite wall %R s'; time make -C \$PROJ -j2||clean build of the generated C project (gen-cproject.sh: 36 units x 16 functions + main.c, cc -O2, then one link), make -j2; makej:jobs=2,units=37 is the shape (its job costs are its own)"
  "make-j4|make -s -C \$PROJ clean|TIMEFORMAT='record-suite wall %R s'; time make -C \$PROJ -j4||as make-j2 with -j4"
  "nice-hogs||\$BIN/hogs -t 1.5 0 0 5 19 idle||5 busy loops for 1.5 s: nice 0 twice, nice 5, nice 19, SCHED_IDLE; the .out gives each one's CPU time (few events: busy loops switch only at ticks and balancing)"
  "cyclictest-hogs||\$BIN/hogs -t 0.7 0 0 & sleep 0.05; cyclictest -m -q -p 80 -i 1000 -l 500; wait||cyclictest (1 SCHED_FIFO-80 thread, 1 ms period, 500 loops) beside 2 nice-0 busy loops (0.7 s); cyclictest holds /dev/cpu_dma_latency at 0 while it runs (no deep idle: see its .out); rtmix is the nearest built-in"
  "threadpool||\$BIN/threadpool -w 4 -n 2000 -u 200 -q 8||threadpool.c: a producer queues 2000 jobs of 200 us CPU to 4 workers (mutex + 2 condvars, queue of 8)"
)
holdout=(
  "hackbench-thread-sock-g4-f10||hackbench -T -g 4 -f 10 -l 300|hackbench:groups=4,fds=10,loops=300,mode=socket,threads=1|rt-tests hackbench: 4 groups x 10 senders/10 receivers, socketpairs, threads, 300 loops"
  "messaging-pipe-g3||perf bench sched messaging -p -g 3 -l 100|hackbench:groups=3,fds=20,loops=100,mode=pipe|perf bench sched messaging: 3 groups, pipes, processes, 100 loops"
  "pipe-threads||perf bench sched pipe -T -l 3000||perf bench sched pipe with threads (-T): 2 threads, 3000 round trips over 2 pipes"
  "make-j3|make -s -C \$PROJ clean|TIMEFORMAT='record-suite wall %R s'; time make -C \$PROJ -j3||as the suite's make-j2 with -j3"
  "nice-hogs-3||\$BIN/hogs -t 1.0 0 10 19||3 busy loops for 1.0 s at nice 0, 10 and 19; the .out gives each one's CPU time"
  "threadpool-w2||\$BIN/threadpool -w 2 -n 1000 -u 500 -q 4||threadpool.c: a producer queues 1000 jobs of 500 us CPU to 2 workers (queue of 4)"
  "cyclictest-hogs-2||\$BIN/hogs -t 0.8 0 5 & sleep 0.05; cyclictest -m -q -p 90 -i 2000 -l 300; wait||cyclictest (1 SCHED_FIFO-90 thread, 2 ms period, 300 loops) beside busy loops at nice 0 and 5 (0.8 s); added 2026-11-27 (the set had no periodic RT task)"
  "idle-hogs||\$BIN/hogs -t 1.0 0 idle idle||3 busy loops for 1.0 s: nice 0 and two SCHED_IDLE; added 2026-11-27 (the set had no SCHED_IDLE task)"
  "make-j1|make -s -C \$PROJ clean|TIMEFORMAT='record-suite wall %R s'; time make -C \$PROJ -j1||as the suite's make-j2 with -j1 (one job at a time); added 2026-11-27 (the set had no serial build)"
)
if [[ $set_name == holdout ]]; then set=("${holdout[@]}"); else set=("${validation[@]}"); fi

field() { local IFS='|'; local -a f; read -r -a f <<< "$1"; echo "${f[$2]:-}"; }

if [[ $list == 1 ]]; then
  for w in "${set[@]}"; do printf '%-28s %s\n' "$(field "$w" 0)" "$(field "$w" 2)"; done
  exit 0
fi
for n in "${only[@]}"; do
  found=0
  for w in "${set[@]}"; do [[ $(field "$w" 0) == "$n" ]] && found=1; done
  [[ $found == 1 ]] || { echo "record-suite.sh: no workload '$n' in the $set_name set (--list)" >&2; exit 2; }
done
# Splits a trace's events (gzipped or not) into the workload's (the parent of the trace's first
# fork is record-trace.sh's shell, which forks the command as soon as tracing is on; the task it
# forks runs the command; their descendants), kernel threads', the VM agent's (background) and
# everything else's (foreign: other users' work that ran during the recording). Prints
# "FOREIGN BACKGROUND TOTAL comm:count...". (Not the trace's first task: an event of another
# CPU, an interrupt's wakeup or a kernel thread's switch, can come before the shell's fork.)
foreign() {
  local root
  root=$(zcat -f "$1" | awk '/sched_process_fork:/ && match($0, / pid=[0-9]+/) {
    print substr($0, RSTART + 5, RLENGTH - 5) + 0; exit }')
  zcat -f "$1" | awk -v R="$root" '
    /^#/ { next }
    {
      if (!match($0, /-[0-9]+ +\[[0-9]+\]/)) next
      comm = substr($0, 1, RSTART - 1); sub(/^ +/, "", comm)
      pid = substr($0, RSTART + 1) + 0
      if ($0 ~ /sched_process_fork:/ && match($0, / pid=[0-9]+/)) {
        ppid = substr($0, RSTART + 5, RLENGTH - 5) + 0
        if (match($0, /child_pid=[0-9]+/)) {
          cpid = substr($0, RSTART + 10, RLENGTH - 10) + 0
          if (W == "" && ppid == R) { W = cpid; D[cpid] = 1 } else if (ppid in D) D[cpid] = 1
        }
      }
      total++
      if (pid == 0 || pid == R || (pid in D)) next
      if (comm ~ /^(<idle>|swapper|kworker|ksoftirqd|rcu_|migration|kcompactd|kswapd|khugepaged|kdamond|cpuhp|idle_inject|watchdog|oom_reaper|kthreadd|jbd2|irq\/|kblockd|writeback|kauditd|khungtaskd|ksmd|kdevtmpfs|psimon|hwrng|kstrp|mm_percpu_wq|kthrotld|<\.\.\.>)/) next
      if (comm ~ /^(memfd:sealed|tokio-rt-worker|process_api|vsock-console|spawner|stop-step|guest-stats)/) { bg++; next }
      n[comm]++; f++
    }
    END { printf "%d %d %d", f, bg, total; for (c in n) printf " %s:%d", c, n[c]; printf "\n" }'
}

selected() { [[ ${#only[@]} -eq 0 ]] && return 0; local n; for n in "${only[@]}"; do [[ $n == "$1" ]] && return 0; done; return 1; }

failed=0
if [[ $toml_only == 0 ]]; then
# ---- tools ------------------------------------------------------------------------------------
[[ $(id -u) == 0 ]] || { echo "record-suite.sh: needs root (tracefs, SCHED_FIFO, SCHED_IDLE)" >&2; exit 1; }
need() { command -v "$1" > /dev/null || { echo "record-suite.sh: '$1' not found: install the package $2" >&2; exit 1; }; }
need perf "perf (Debian: linux-perf)"
need hackbench "rt-tests"
need cyclictest "rt-tests"
need gcc "gcc"
need make "make"
need gzip "gzip"
need flock "util-linux"

work=$(mktemp -d /tmp/schedkit-suite.XXXXXX)
recording=0 # while 1, the marker file is ours (made under the lock): removed if we are stopped
trap 'rm -rf "$work"; if [[ $recording == 1 ]]; then rm -f /tmp/schedkit-recording-now; fi' EXIT
BIN=$work/bin
PROJ=$work/cproject
mkdir -p "$BIN"
gcc -O2 -Wall -pthread -o "$BIN/threadpool" "$src/threadpool.c"
gcc -O2 -Wall -o "$BIN/hogs" "$src/hogs.c"
bash "$src/gen-cproject.sh" "$PROJ" 36 16
make -s -C "$PROJ" > /dev/null # warm the page cache and check that it builds
if [[ -z ${SCHBENCH:-} ]]; then
  if command -v schbench > /dev/null; then
    SCHBENCH=$(command -v schbench)
  elif [[ $set_name == validation ]] && { [[ ${#only[@]} -eq 0 ]] || selected schbench; }; then
    need git "git (to fetch schbench)"
    echo "record-suite.sh: building schbench from github.com/masoncl/schbench ($SCHBENCH_COMMIT)" >&2
    git clone -q https://github.com/masoncl/schbench "$work/schbench-src" \
      || { echo "record-suite.sh: cannot clone schbench; set SCHBENCH=/path/to/schbench" >&2; exit 1; }
    git -C "$work/schbench-src" checkout -q "$SCHBENCH_COMMIT"
    make -s -C "$work/schbench-src" > /dev/null
    SCHBENCH=$work/schbench-src/schbench
  fi
fi
export BIN PROJ SCHBENCH

# ---- recording ---------------------------------------------------------------------------------
cpu_busy_pct() { # the machine's CPU use over one second, percent
  local a b
  a=($(head -1 /proc/stat)); sleep 1; b=($(head -1 /proc/stat))
  awk -v a="${a[*]}" -v b="${b[*]}" 'BEGIN {
    split(a, x); split(b, y); t = 0
    for (i = 2; i <= 9; i++) t += y[i] - x[i]
    idle = (y[5] - x[5]) + (y[6] - x[6])
    printf "%d", (t > 0 ? 100 * (t - idle) / t : 0) }'
}
wait_quiet() { # no compiler of others running and the CPUs at most 10% busy
  local waited=0 busy pct
  while :; do
    busy=$(for p in rustc cargo cc1 cc1plus ld ld.bfd ld.gold; do pgrep -x "$p" | sed "s/.*/$p/" || true; done \
      | sort | uniq -c | awk '{printf "%s%s x%s", s, $2, $1; s=", "}')
    pct=$(cpu_busy_pct)
    [[ -z $busy && $pct -le 10 ]] && return 0
    [[ -z $busy ]] && busy="CPUs ${pct}% busy"
    if (( waited >= QUIET_WAIT_S )); then
      echo "record-suite.sh: machine still busy after ${waited} s ($busy): recording anyway" >&2
      return 0
    fi
    echo "record-suite.sh: waiting for the machine to be quiet ($busy)" >&2
    sleep 9
    waited=$((waited + 10))
  done
}

mkdir -p "$outdir"
# Records NAME's command into TRACE (gzipped at the end) and its output into OUT, retrying when
# others' work ran in the window; returns non-zero when the command failed or events were lost.
record_one() {
  local name=$1 setup=$2 cmd=$3 trace=$4 out=$5 attempt rc hdr fe bg total others
  for attempt in $(seq 1 "$RETRIES"); do
    [[ -n $setup ]] && bash -c "$setup" > /dev/null
    wait_quiet
    echo "record-suite.sh: recording $name: $cmd${6:+ ($6)}" >&2
    rm -f "$trace" "$trace.gz" "$trace.zst"
    rc=0
    recording=1
    # The marker file is made and removed under the lock, so that it never outlives our hold.
    flock /tmp/schedkit-tracefs.lock bash -c '
      touch /tmp/schedkit-recording-now
      "$1/record-trace.sh" "$2" -- bash -c "cd \"\$0\" && { $3 ; } > \"\$1\" 2>&1" "$4" "$5"
      rc=$?
      rm -f /tmp/schedkit-recording-now
      exit $rc' _ "$here" "$trace" "$cmd" "$work" "$out" || rc=$?
    recording=0
    [[ $rc == 0 ]] || break
    read -r fe bg total others <<< "$(foreign "$trace")"
    # Others' work in the window: more than 50 events and 0.5% of the trace makes a retry.
    if (( fe > 50 && fe * 200 > total )); then
      echo "record-suite.sh: $name: $fe of $total events are other users' tasks ($others)" >&2
      (( attempt < RETRIES )) && { echo "record-suite.sh: $name: recording again" >&2; continue; }
      echo "record-suite.sh: $name: kept with them after $RETRIES attempts" >&2
    fi
    break
  done
  if [[ $rc != 0 ]]; then
    echo "record-suite.sh: $name FAILED (exit $rc); its output:" >&2
    cat "$out" >&2 || true
    return 1
  fi
  hdr=$(grep -m1 'entries-in-buffer/entries-written' "$trace" || true)
  rc=0
  if ! [[ $hdr =~ ([0-9]+)/([0-9]+) ]] || [[ ${BASH_REMATCH[1]} != "${BASH_REMATCH[2]}" ]] \
     || grep -q 'LOST.*EVENTS' "$trace"; then
    echo "record-suite.sh: $name LOST EVENTS ($hdr): enlarge buffer_size_kb or shorten the run" >&2
    rc=1
  fi
  # The suite's own traces are gzipped (any tool reads them); the repeats, only measured by
  # schedkit, are zstd-compressed where zstd is installed (a third smaller).
  local z=gz events
  events=$(grep -vc '^#' "$trace" || true)
  if [[ -n ${6:-} ]] && command -v zstd > /dev/null; then
    z=zst
    zstd -19 -q -f --rm "$trace" -o "$trace.zst"
  else
    gzip -9 -f "$trace"
  fi
  echo "record-suite.sh: $name: $events events, $(stat -c %s "$trace.$z") bytes ($z)" >&2
  return $rc
}

for w in "${set[@]}"; do
  name=$(field "$w" 0)
  selected "$name" || continue
  setup=$(field "$w" 1)
  cmd=$(field "$w" 2)
  if [[ $repeats_only == 0 ]]; then
    record_one "$name" "$setup" "$cmd" "$outdir/$name.txt" "$outdir/$name.out" || failed=1
  elif [[ ! -f $outdir/$name.txt.gz ]]; then
    echo "record-suite.sh: $name: no $outdir/$name.txt.gz to repeat (--repeats-only)" >&2
    failed=1
    continue
  fi
  if (( repeats > 0 )); then
    mkdir -p "$outdir/repeats"
    rm -f "$outdir/repeats/$name".*
    for i in $(seq 1 "$repeats"); do
      record_one "$name" "$setup" "$cmd" "$outdir/repeats/$name.$i.txt" "$outdir/repeats/$name.$i.out" \
        "repeat $i of $repeats" || failed=1
    done
  fi
done

fi

# ---- suite.toml --------------------------------------------------------------------------------
toml_str() { local s=$1; s=${s//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }

# The headline figure each benchmark prints (name, value), from its .out.
headline() {
  local name=$1 out=$2
  case $name in
    pipe*) awk '/usecs\/op/ {print "usecs/op", $1; exit}' "$out" ;;
    messaging*) awk '/Total time:/ {print "Total time [sec]", $3; exit}' "$out" ;;
    hackbench*) awk '/^Time:/ {print "Time", $2; exit}' "$out" ;;
    schbench) awk '/Wakeup Latencies/ {w=1} w && /\*/ {v=$3} /Request Latencies/ {w=0} END {if (v != "") print "Wakeup latency p99 (usec)", v}' "$out" ;;
    make-*) awk '/^record-suite wall / {print "wall s (bash time)", $3}' "$out" ;;
    cyclictest*) awk '/Max:/ {for (i = 1; i <= NF; i++) if ($i == "Max:") print "Max (us)", $(i+1); exit}' "$out" ;;
    threadpool) awk '/^Total time:/ {print "Total time (ms)", $3; exit}' "$out" ;;
  esac
}

kver=$(uname -r)
major=${kver%%.*}; rest=${kver#*.}; minor=${rest%%.*}; minor=${minor%%[^0-9]*}
# The nearest class schedkit models (`schedkit list policies`): 6.18's EEVDF from 6.12 on
# (DELAY_DEQUEUE and PREEMPT_SHORT arrived in 6.12), 6.6's EEVDF for 6.6-6.11, CFS of 2.6.32
# before that. Edit suite.toml, or pass --policy to validate, for another.
if (( major > 6 || (major == 6 && minor >= 12) )); then class="eevdf:era=6.18"
elif (( major == 6 && minor >= 6 )); then class="eevdf:era=6.6"
else class="cfs:era=2.6.32"; fi
hz=$( (zcat /proc/config.gz 2>/dev/null || cat "/boot/config-$kver" 2>/dev/null) | sed -n 's/^CONFIG_HZ=//p')
config=$( (zcat /proc/config.gz 2>/dev/null || cat "/boot/config-$kver" 2>/dev/null) \
  | grep -E '^(# )?CONFIG_(HZ|PREEMPT|SCHED_|NO_HZ|NUMA|SMP|NR_CPUS)|AUTOGROUP' | grep -v TRACER || true)
D=/sys/kernel/debug/sched
# debugfs holds sched_features and the preemption mode; mounted for the read where it is not.
[[ -d $D ]] || mount -t debugfs nodev /sys/kernel/debug 2>/dev/null || true
if preempt=$(cat $D/preempt 2>/dev/null); then :; else
  err=$(cat $D/preempt 2>&1 >/dev/null | sed 's/^cat: //' || true)
  mode=none
  grep -q '^CONFIG_PREEMPT_VOLUNTARY=y' <<< "$config" && mode=voluntary
  grep -q '^CONFIG_PREEMPT=y' <<< "$config" && mode=full
  grep -q '^CONFIG_PREEMPT_LAZY=y' <<< "$config" && mode=lazy
  cmdline_mode=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^preempt=//p')
  [[ -n $cmdline_mode ]] && mode="$cmdline_mode (preempt= on the command line)"
  dyn=""; grep -q '^CONFIG_PREEMPT_DYNAMIC=y' <<< "$config" && dyn=", PREEMPT_DYNAMIC"
  preempt="unreadable ($err): $mode by CONFIG_PREEMPT_${mode^^}=y$dyn"
  [[ -n $cmdline_mode ]] && preempt="unreadable ($err): $mode$dyn"
fi
if features=$(cat $D/features 2>/dev/null); then :; else
  err=$(cat $D/features 2>&1 >/dev/null | sed 's/^cat: //' || true)
  mask=$(sed -n 's/^ *\.sysctl_sched_features *: *//p' $D/debug 2>/dev/null || true)
  features="unreadable: $err"
  [[ -n $mask ]] && features+="; $D/debug gives .sysctl_sched_features = $mask (the bitmask of SCHED_FEAT bits in kernel/sched/features.h order)"
fi
base_slice=$(sed -n 's/^ *\.sysctl_sched_base_slice *: *//p' $D/debug 2>/dev/null || true)
autogroup=$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo 0)

{
  echo "# schedkit trace suite ($set_name set), written by scripts/record-suite.sh; docs/traces.md"
  echo "# what recorded it"
  echo "kernel = $(toml_str "$kver")"
  echo "uname = $(toml_str "$(uname -a)")"
  echo "recorded = \"$(date +%F)\""
  echo "machine = $(toml_str "$MACHINE")            # schedkit machine profile of this machine"
  echo "class = $(toml_str "$class")     # the recording kernel's fair class"
  echo "hz = ${hz:-0}                     # CONFIG_HZ"
  echo "preempt = $(toml_str "$preempt")"
  echo "sched_features = $(toml_str "$features")"
  echo "config = '''"
  echo "$config"
  echo "'''"
  echo "autogroup = $autogroup"
  echo "# cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
  [[ -n $base_slice ]] && echo "# sched/debug .sysctl_sched_base_slice: $base_slice ms"
  echo "# kernel command line: $(sed 's/ -- .*//' /proc/cmdline)"
  echo "# tools: $(perf version 2>&1 | head -1); hackbench/cyclictest from rt-tests $(dpkg-query -W -f '${Version}' rt-tests 2>/dev/null || echo '?'); $(gcc --version | head -1)"
  [[ $set_name == validation ]] && echo "# schbench: github.com/masoncl/schbench at $SCHBENCH_COMMIT (built with its Makefile)"
  echo "# Each trace: /sys/kernel/tracing/trace of sched_switch, sched_waking, sched_wakeup, sched_wakeup_new,"
  echo "# sched_migrate_task, sched_process_fork, sched_process_exit (and, where the kernel has syscall"
  echo "# tracepoints, sys_enter/sys_exit_sched_setscheduler) over the whole machine while the command"
  echo "# ran (scripts/record-trace.sh, 16 MiB buffer per CPU); the command ran under bash -c from a temporary"
  echo "# directory holding our programs (\$BIN) and the generated C project (\$PROJ)."
  for w in "${set[@]}"; do
    name=$(field "$w" 0)
    [[ -f $outdir/$name.txt.gz ]] || continue
    setup=$(field "$w" 1); cmd=$(field "$w" 2); model=$(field "$w" 3); note=$(field "$w" 4)
    shown=${cmd//\$BIN\//}; shown=${shown//\$PROJ/cproject}; shown=${shown//\$SCHBENCH/schbench}
    read -r events first last < <(zcat "$outdir/$name.txt.gz" | awk '
      !/^#/ { n++; if (match($0, /[0-9]+\.[0-9]+: /)) { t = substr($0, RSTART, RLENGTH - 2); if (f == "") f = t; l = t } }
      END { print n + 0, f == "" ? 0 : f, l == "" ? 0 : l }')
    duration=$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.6f", b - a }')
    hdr=$( (zcat "$outdir/$name.txt.gz" | grep 'entries-in-buffer/entries-written' | head -1 | sed 's/^# *//; s/ *#P.*//') || true)
    read -r fe bg total others <<< "$(foreign "$outdir/$name.txt.gz")"
    echo
    echo "[[workload]]"
    echo "name = $(toml_str "$name")"
    echo "trace = $(toml_str "$name.txt.gz")"
    echo "command = $(toml_str "$shown")"
    echo "output = $(toml_str "$name.out")"
    echo "events = $events"
    echo "duration_s = $duration"
    hl=$(headline "$name" "$outdir/$name.out" || true)
    if [[ -n $hl ]]; then
      echo "headline = { name = $(toml_str "${hl% *}"), value = ${hl##* } }"
    fi
    if [[ -n $model ]]; then echo "model = $(toml_str "$model")"; fi
    echo "# $note"
    [[ -n $setup ]] && echo "# before tracing: ${setup//\$PROJ/cproject}"
    echo "# tracefs $hdr"
    echo "# events of other users' tasks in the window: $fe${others:+ (${others// /, })}; of the VM's agent: ${bg:-0}"
    i=1
    while :; do
      rep=""
      for z in zst gz; do
        [[ -f $outdir/repeats/$name.$i.txt.$z ]] && rep=repeats/$name.$i.txt.$z && break
      done
      [[ -n $rep ]] || break
      echo "[[workload.repeat]]"
      echo "trace = $(toml_str "$rep")"
      if [[ -f $outdir/repeats/$name.$i.out ]]; then
        echo "output = $(toml_str "repeats/$name.$i.out")"
        hl=$(headline "$name" "$outdir/repeats/$name.$i.out" || true)
        [[ -n $hl ]] && echo "headline = ${hl##* }"
      fi
      i=$((i + 1))
    done
  done
} > "$outdir/suite.toml"
echo "record-suite.sh: wrote $outdir/suite.toml" >&2
exit $failed
