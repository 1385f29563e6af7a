/*
 * hogs: K busy-loop processes at chosen nice levels or policies, released together, for T
 * seconds; prints each one's CPU time so that the CPU split the scheduler gave is known.
 * Part of schedkit's trace validation suite (scripts/record-suite.sh).
 *
 *   hogs [-t SECONDS=1.0] SPEC...
 *
 * Each SPEC makes one child: a number is a nice level (SCHED_OTHER), `idle` is SCHED_IDLE,
 * `batch` is SCHED_BATCH at nice 0. Example: hogs -t 1 0 5 19 idle
 *
 * The parent forks every child, each sets its own nice/policy and sleeps until a common start
 * time 50 ms ahead (clock_nanosleep TIMER_ABSTIME on CLOCK_MONOTONIC), then spins until start +
 * T. The parent wait4()s them and prints each child's user+system CPU time (from the child's
 * rusage) and its share of the total.
 *
 * Build: cc -O2 -o hogs hogs.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXK 64

static volatile unsigned long sink;

static double ts_s(const struct timespec *t) { return t->tv_sec + t->tv_nsec * 1e-9; }
static double tv_s(const struct timeval *t) { return t->tv_sec + t->tv_usec * 1e-6; }

int main(int argc, char **argv)
{
	double secs = 1.0;
	int c;
	while ((c = getopt(argc, argv, "t:")) != -1) {
		if (c == 't')
			secs = atof(optarg);
		else {
			fprintf(stderr, "usage: %s [-t seconds] SPEC... (SPEC: nice level, idle, batch)\n", argv[0]);
			return 2;
		}
	}
	int k = argc - optind;
	if (k < 1 || k > MAXK || secs <= 0) {
		fprintf(stderr, "hogs: need 1..%d SPECs and a positive -t\n", MAXK);
		return 2;
	}

	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	start.tv_nsec += 50 * 1000 * 1000;
	if (start.tv_nsec >= 1000000000) {
		start.tv_sec++;
		start.tv_nsec -= 1000000000;
	}
	double end = ts_s(&start) + secs;

	pid_t pids[MAXK];
	for (int i = 0; i < k; i++) {
		const char *spec = argv[optind + i];
		pid_t p = fork();
		if (p < 0) {
			perror("fork");
			return 1;
		}
		if (p == 0) {
			struct sched_param sp = { 0 };
			if (!strcmp(spec, "idle")) {
				if (sched_setscheduler(0, SCHED_IDLE, &sp)) {
					perror("sched_setscheduler(SCHED_IDLE)");
					_exit(1);
				}
			} else if (!strcmp(spec, "batch")) {
				if (sched_setscheduler(0, SCHED_BATCH, &sp)) {
					perror("sched_setscheduler(SCHED_BATCH)");
					_exit(1);
				}
			} else if (setpriority(PRIO_PROCESS, 0, atoi(spec))) {
				perror("setpriority");
				_exit(1);
			}
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &start, NULL) == EINTR)
				;
			unsigned long x = 1;
			struct timespec now;
			do {
				for (int j = 0; j < 1000; j++)
					x = x * 6364136223846793005UL + 1442695040888963407UL;
				clock_gettime(CLOCK_MONOTONIC, &now);
			} while (ts_s(&now) < end);
			sink = x;
			_exit(0);
		}
		pids[i] = p;
	}

	double cpu[MAXK], total = 0;
	int bad = 0;
	for (int i = 0; i < k; i++) {
		int st;
		struct rusage ru;
		if (wait4(pids[i], &st, 0, &ru) < 0) {
			perror("wait4");
			return 1;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
		cpu[i] = tv_s(&ru.ru_utime) + tv_s(&ru.ru_stime);
		total += cpu[i];
	}
	printf("# hogs: %d children for %.3f s on %ld CPUs\n", k, secs, sysconf(_SC_NPROCESSORS_ONLN));
	for (int i = 0; i < k; i++) {
		const char *spec = argv[optind + i];
		printf("hog %d pid %d %s%s: cpu %.3f s (%.1f%% of hog CPU)\n", i, (int)pids[i],
		       (!strcmp(spec, "idle") || !strcmp(spec, "batch")) ? "policy " : "nice ",
		       spec, cpu[i], total > 0 ? 100 * cpu[i] / total : 0.0);
	}
	printf("total hog cpu %.3f s of %.3f s x %ld CPUs\n", total, secs, sysconf(_SC_NPROCESSORS_ONLN));
	return bad;
}
