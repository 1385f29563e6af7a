#!/usr/bin/env bash
# The address-space sizes and write-fault counts behind the `fork` workload's model
# (workload/builtin.rs: LAT_PROC_PAGES, HELLO_PAGES, SH_PAGES and the pages each side writes).
# Builds an lmbench-like lat_proc and hello with the machine's C compiler and prints:
#   - resident pages (/proc/PID/statm, 2nd field) of hello, of the lat_proc parent after a
#     few forks, and of /bin/sh;
#   - minor faults of the parent between fork() and its return, and through wait(), and of
#     the child (getrusage), for fork+exit and fork+execve.
set -euo pipefail
cc=${CC:-cc}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cat > "$d/lp.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
static long resident(void) {
    char b[128]; int fd = open("/proc/self/statm", O_RDONLY); int n = read(fd, b, 127);
    close(fd); b[n > 0 ? n : 0] = 0; long size, res; sscanf(b, "%ld %ld", &size, &res); return res;
}
static long faults(int who) { struct rusage r; getrusage(who, &r); return r.ru_minflt; }
int main(int argc, char **argv) {
    if (argc < 2) { printf("hello: %ld resident pages\n", resident()); return 0; }
    int exec = strcmp(argv[1], "exec") == 0;
    long after = 0, through = 0, child = 0;
    for (int i = 0; i < 10; i++) {
        long p0 = faults(RUSAGE_SELF), c0 = faults(RUSAGE_CHILDREN);
        pid_t p = fork();
        if (p == 0) {
            if (exec) { close(1); execve(argv[2], (char *[]){argv[2], 0}, 0); }
            exit(1);
        }
        long p1 = faults(RUSAGE_SELF);
        while (wait(0) != p) ;
        after = p1 - p0; through = faults(RUSAGE_SELF) - p0; child = faults(RUSAGE_CHILDREN) - c0;
    }
    printf("lat_proc %s: parent %ld resident pages; write faults: parent %ld after fork, %ld through wait; child %ld\n",
           argv[1], resident(), after, through, child);
    return 0;
}
C
"$cc" -O2 -o "$d/lp" "$d/lp.c"
"$d/lp"
"$d/lp" exit
"$d/lp" exec "$d/lp"
sh -c 'read -r size res rest < /proc/$$/statm; echo "/bin/sh ($(readlink -f /bin/sh)): $res resident pages"; true'
ldd --version 2>/dev/null | head -1 || true
