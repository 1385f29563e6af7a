/*
 * threadpool: a producer thread queues N small CPU jobs into a bounded queue served by a pool
 * of W worker threads (one pthread mutex, two condition variables), the shape of a typical
 * application thread pool. Part of schedkit's trace validation suite (scripts/record-suite.sh).
 *
 *   threadpool [-w WORKERS=4] [-n JOBS=2000] [-u JOB_US=200] [-q QUEUE=8]
 *
 * Each job burns JOB_US microseconds of the worker's own CPU time (CLOCK_THREAD_CPUTIME_ID), so
 * the CPU demand is fixed whatever the scheduler does. The producer blocks when the queue is
 * full and is woken by the worker that takes a job; an idle worker sleeps on the condition
 * variable and is woken (pthread_cond_signal) by the producer. The main thread (the producer)
 * prints the wall time from the first queued job to the last finished one and each worker's
 * job count and CPU time.
 *
 * Build: cc -O2 -pthread -o threadpool threadpool.c
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int workers = 4, njobs = 2000, job_us = 200, qcap = 8;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t all_done = PTHREAD_COND_INITIALIZER;
static int queued, taken_total, done_total, closing;

struct wstat { pthread_t th; int jobs; double cpu_ms; };

static double now_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile unsigned long sink;

static void burn(int us)
{
	double end = now_s(CLOCK_THREAD_CPUTIME_ID) + us * 1e-6;
	unsigned long x = 1;
	while (now_s(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 200; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

static void *worker(void *arg)
{
	struct wstat *st = arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (queued == 0 && !closing)
			pthread_cond_wait(&not_empty, &lock);
		if (queued == 0 && closing) {
			pthread_mutex_unlock(&lock);
			break;
		}
		queued--;
		taken_total++;
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&lock);

		burn(job_us);
		st->jobs++;

		pthread_mutex_lock(&lock);
		if (++done_total == njobs)
			pthread_cond_signal(&all_done);
		pthread_mutex_unlock(&lock);
	}
	st->cpu_ms = now_s(CLOCK_THREAD_CPUTIME_ID) * 1e3;
	return NULL;
}

int main(int argc, char **argv)
{
	int c;
	while ((c = getopt(argc, argv, "w:n:u:q:")) != -1) {
		switch (c) {
		case 'w': workers = atoi(optarg); break;
		case 'n': njobs = atoi(optarg); break;
		case 'u': job_us = atoi(optarg); break;
		case 'q': qcap = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-w workers] [-n jobs] [-u job_us] [-q queue]\n", argv[0]);
			return 2;
		}
	}
	if (workers < 1 || njobs < 1 || job_us < 1 || qcap < 1) {
		fprintf(stderr, "threadpool: all values must be positive\n");
		return 2;
	}
	struct wstat *ws = calloc(workers, sizeof *ws);
	for (int i = 0; i < workers; i++)
		if (pthread_create(&ws[i].th, NULL, worker, &ws[i])) {
			perror("pthread_create");
			return 1;
		}
	usleep(10000); /* let the workers reach their wait */

	double t0 = now_s(CLOCK_MONOTONIC);
	for (int j = 0; j < njobs; j++) {
		pthread_mutex_lock(&lock);
		while (queued == qcap)
			pthread_cond_wait(&not_full, &lock);
		queued++;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_lock(&lock);
	while (done_total < njobs)
		pthread_cond_wait(&all_done, &lock);
	double t1 = now_s(CLOCK_MONOTONIC);
	closing = 1;
	pthread_cond_broadcast(&not_empty);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < workers; i++)
		pthread_join(ws[i].th, NULL);

	printf("# threadpool: %d workers, %d jobs of %d us CPU, queue %d\n", workers, njobs, job_us, qcap);
	for (int i = 0; i < workers; i++)
		printf("worker %d: %d jobs, %.2f ms CPU\n", i, ws[i].jobs, ws[i].cpu_ms);
	printf("producer: %.2f ms CPU\n", now_s(CLOCK_THREAD_CPUTIME_ID) * 1e3);
	printf("Total time: %.3f ms\n", (t1 - t0) * 1e3);
	return 0;
}
