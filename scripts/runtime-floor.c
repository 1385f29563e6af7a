/* The fixed costs under a runtime yield or wakeup on this machine, each timed alone in a loop:
 * a TSC read (the runtime's clock: `runtime/clock.rs`), a runqueue lock section's two locked
 * instructions (std's futex mutex: `lock cmpxchg` to take, `xchg` to release), a spin lock's
 * (`lock cmpxchg`, then a plain store), and the locked decrement of `preempt_count` on the way
 * back to task code (`runtime/resched.rs`). docs/runtime.md quotes them.
 *
 *   gcc -O2 -o /tmp/runtime-floor scripts/runtime-floor.c && chrt -f 50 /tmp/runtime-floor
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void) {
    const int n = 50000000;
    volatile uint64_t sink = 0;
    int word = 0;
    double t0 = now_ns();
    for (int i = 0; i < n; i++)
        sink += __rdtsc();
    double t1 = now_ns();
    printf("rdtsc                          %.2f ns\n", (t1 - t0) / n);
    t0 = now_ns();
    for (int i = 0; i < n; i++) {
        int expected = 0;
        __atomic_compare_exchange_n(&word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
        __atomic_exchange_n(&word, 0, __ATOMIC_RELEASE);
    }
    t1 = now_ns();
    printf("lock cmpxchg + xchg (mutex)    %.2f ns\n", (t1 - t0) / n);
    t0 = now_ns();
    for (int i = 0; i < n; i++) {
        int expected = 0;
        __atomic_compare_exchange_n(&word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
        __atomic_store_n(&word, 0, __ATOMIC_RELEASE);
    }
    t1 = now_ns();
    printf("lock cmpxchg + store (spin)    %.2f ns\n", (t1 - t0) / n);
    t0 = now_ns();
    for (int i = 0; i < n; i++) {
        __atomic_fetch_sub(&word, 1, __ATOMIC_SEQ_CST);
        __atomic_store_n(&word, 1, __ATOMIC_RELAXED);
    }
    t1 = now_ns();
    printf("lock sub (preempt_count)       %.2f ns\n", (t1 - t0) / n);
    return (int)(sink & 0);
}
