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
