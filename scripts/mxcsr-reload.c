/* What an `ldmxcsr` costs on this machine when it changes the register and when it writes the
 * value already there: two MXCSR images stored and loaded in turn, as two contexts' switches
 * do (`runtime/arch.rs`). The images differ only in the precision flag (0x20), a sticky status
 * bit that any inexact floating-point operation sets. docs/runtime.md quotes it.
 *
 *   gcc -O2 -o /tmp/mxcsr-reload scripts/mxcsr-reload.c && chrt -f 50 /tmp/mxcsr-reload
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static uint32_t img[32];

static double round_trip(uint32_t a, uint32_t b) {
    const int n = 5000000;
    /* The register holds b, the first image loaded is a: from then on each load brings in
     * the other context's value, as each switch between two contexts does. */
    img[0] = a;
    __asm__ volatile("ldmxcsr %0" ::"m"(b));
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        uint32_t *save = &img[i & 1 ? 0 : 16], *load = &img[i & 1 ? 16 : 0];
        __asm__ volatile("stmxcsr %0\n\tldmxcsr %1" : "=m"(*save) : "m"(*load));
    }
    return (now_ns() - t0) / n;
}

int main(void) {
    printf("stmxcsr + ldmxcsr, same value      %.2f ns\n", round_trip(0x1f80, 0x1f80));
    printf("stmxcsr + ldmxcsr, flags differ    %.2f ns\n", round_trip(0x1fa0, 0x1f80));
    uint32_t dflt = 0x1f80;
    __asm__ volatile("ldmxcsr %0" ::"m"(dflt));
    return 0;
}
