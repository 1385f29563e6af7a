// Does this machine's kernel pack a pipe ping-pong pair onto one CPU when another CPU is idle?
// (docs/validation.md, "The recording kernel packs wakees onto a busy vCPU")
//
//   gcc -O2 -pthread -o /tmp/vcpu-pack-probe scripts/vcpu-pack-probe.c
//   /tmp/vcpu-pack-probe [RUNS] [MESSAGES]        (defaults: 8 runs of 5000 messages)
//
// Two tasks (threads of one process, then two processes) send one byte back and forth over
// two pipes. Each run starts spread: the first task pinned to CPU 0 and the second to CPU 1
// for their first 20 messages, then both free to run on CPUs 0 and 1. After every message each
// side records the CPU it runs on (the getcpu system call, not glibc's rseq-cached value); the
// figure of a run is the share of messages at which both sides were on the same CPU.
//
// What mainline Linux 6.18 does: a pipe write wakes the reader with WF_SYNC; the reader's last
// CPU is the other one, idle, and `select_idle_sibling(p, prev, target)` returns an idle `prev`
// that shares the waker's LLC (fair.c, `select_idle_sibling`), so the pair stays spread: each
// run near 0 %. A kernel that packs wakees onto the waker's busy CPU gives runs near 100 %.
// Needs two CPUs sharing a cache, both allowed to this process, and a quiet machine.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int a2b[2], b2a[2];
static long messages;
static signed char *where;  // where[2 * i + side]: the CPU of `side` after message i

static void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  if (cpu < 0) {
    CPU_SET(0, &s);
    CPU_SET(1, &s);
  } else {
    CPU_SET(cpu, &s);
  }
  if (sched_setaffinity(0, sizeof s, &s)) {
    perror("sched_setaffinity (needs CPUs 0 and 1)");
    exit(2);
  }
}

static void side(int me) {
  char c = 0;
  pin(me);
  for (long i = 0; i < messages; i++) {
    if (i == 20) pin(-1);
    if (me == 0) {
      if (write(a2b[1], &c, 1) != 1 || read(b2a[0], &c, 1) != 1) exit(1);
    } else {
      if (read(a2b[0], &c, 1) != 1 || write(b2a[1], &c, 1) != 1) exit(1);
    }
    unsigned cpu = 0;
    syscall(SYS_getcpu, &cpu, NULL, NULL);
    where[2 * i + me] = (signed char)cpu;
  }
}

static void *second_thread(void *unused) {
  (void)unused;
  side(1);
  return NULL;
}

static double one_run(int threads) {
  if (pipe(a2b) || pipe(b2a)) {
    perror("pipe");
    exit(2);
  }
  if (threads) {
    pthread_t t;
    pthread_create(&t, NULL, second_thread, NULL);
    side(0);
    pthread_join(t, NULL);
  } else {
    pid_t child = fork();
    if (child == 0) {
      side(1);
      _exit(0);
    }
    side(0);
    waitpid(child, NULL, 0);
  }
  close(a2b[0]), close(a2b[1]), close(b2a[0]), close(b2a[1]);
  long same = 0;
  for (long i = 20; i < messages; i++) same += where[2 * i] == where[2 * i + 1];
  pin(-1);
  return 100.0 * same / (messages - 20);
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 8;
  messages = argc > 2 ? atol(argv[2]) : 5000;
  if (runs < 1 || messages <= 20) {
    fprintf(stderr, "usage: %s [RUNS >= 1] [MESSAGES > 20]\n", argv[0]);
    return 2;
  }
  where = mmap(NULL, 2 * messages, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (where == MAP_FAILED) {
    perror("mmap");
    return 2;
  }
  for (int threads = 1; threads >= 0; threads--) {
    printf("%-9s same CPU after a spread start, %% of messages:", threads ? "threads" : "processes");
    for (int r = 0; r < runs; r++) printf(" %.1f", one_run(threads)), fflush(stdout);
    printf("\n");
  }
  return 0;
}
