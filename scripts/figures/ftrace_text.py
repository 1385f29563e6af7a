"""What the trace scripts of scripts/figures share: reading an ftrace text trace (recorded, or
written by `schedkit replay --trace`; gzip or plain) line by line, a field of an event, and
replaying one of the suite's recordings under the recording kernel's class to such a trace."""
import gzip
import os
import re
import subprocess
import sys

LINE = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S*)\s*([\d.]+):\s+(\w+):\s+(.*)$')
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def field(rest, name):
    """The value of `name=` in an event's text, or None."""
    m = re.search(name + r'=(\S+)', rest)
    return m.group(1) if m else None


def events_in_context(path):
    """Each event line of the trace as (comm, pid, cpu, flags, seconds, event name, the rest):
    the flags are ftrace's (`h`/`s` in them: the event ran in a hardirq or a softirq)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if m:
                comm, pid, cpu, flags, ts, ev, rest = m.groups()
                yield comm, int(pid), int(cpu), flags, float(ts), ev, rest


def events_with_lost_switches(path):
    """`events_in_context`, with the switches the recording lost put back as `schedkit`'s
    importer puts them back (`trace/import/builder.rs`, `infer_switch`): where a CPU's event
    names another task than the CPU's last switch left running, a `sched_switch` to that task
    (comm `<put back>`, prev_state R+) at the CPU's previous event or the task's own last one
    (any event naming it), whichever is later, ordered as the importer orders it (after the
    events already at that time, before the event that revealed it). On the project VMs the
    kernel does not trace a switch out of idle on one of its CPUs; without them a script
    counts fewer switches and migrations than `schedkit validate` does."""
    evs = list(events_in_context(path))
    cur, cpu_last, seen, extra = {}, {}, {}, []
    for i, (comm, pid, cpu, flags, ts, ev, rest) in enumerate(evs):
        running = int(field(rest, "prev_pid")) if ev == "sched_switch" else pid
        if cpu in cur and cur[cpu] != running:
            at = min(ts, max(cpu_last.get(cpu, ts), seen.get(running, 0.0)))
            extra.append(((at, i - 0.5), ("<put back>", cur[cpu], cpu, "", at, "sched_switch",
                          f"prev_comm=? prev_pid={cur[cpu]} prev_prio=0 prev_state=R+ ==> "
                          f"next_comm={comm} next_pid={running} next_prio=0")))
        cur[cpu] = int(field(rest, "next_pid")) if ev == "sched_switch" else running
        cpu_last[cpu] = ts
        # Every task the event names was seen now (the importer's `last_seen`).
        seen[running] = ts
        for key in ("next_pid", " pid", "child_pid"):
            v = field(rest, key)
            if v is not None and v.isdigit():
                seen[int(v)] = ts
    keyed = [((e[4], i), e) for i, e in enumerate(evs)] + extra
    keyed.sort(key=lambda k: k[0])
    for _, e in keyed:
        yield e


def events(path):
    """Each event line of the trace as (pid, cpu, seconds, event name, the rest)."""
    for _, pid, cpu, _, ts, ev, rest in events_in_context(path):
        yield pid, cpu, ts, ev, rest


def recording(workload):
    """The suite's recording of `workload`."""
    return os.path.join(ROOT, "traces", "validation", workload + ".txt.gz")


def replay_trace(schedkit, workload, out):
    """Replays the suite's recording of `workload` under eevdf:era=6.18 on host, seed 1,
    writing its trace to `out`."""
    replay_file(schedkit, recording(workload), "host", out)


def replay_file(schedkit, trace, machine, out):
    """Replays the recording `trace` under eevdf:era=6.18 on `machine`, seed 1, writing its
    trace to `out`."""
    run = subprocess.run([schedkit, "replay", trace, "--policies", "eevdf:era=6.18",
                          "--machine", machine, "--seed", "1", "--trace", out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        sys.exit(f"schedkit replay {trace} failed:\n{run.stderr}")
