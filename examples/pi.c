/*
 * pi — compute pi by a reduction.
 *
 * pi = integral from 0 to 1 of 4 / (1 + x^2) dx. The interval is cut into
 * INTERVALS strips; PE p adds up the midpoint rule over strips p, p + npes,
 * p + 2 npes, ... and shmem_double_sum_reduce adds the PEs' parts together on
 * every PE. Source and destination of a team reduction must be symmetric:
 * here they are globals.
 *
 *   symcc pi.c -o pi -lm && symrun -n 4 ./pi
 */
#include <math.h>
#include <shmem.h>
#include <stdio.h>

#ifndef M_PI /* strict ISO C leaves it out of math.h */
#define M_PI 3.14159265358979323846
#endif

#define INTERVALS 10000000L

static double part, pi; /* symmetric */

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();

    double h = 1.0 / INTERVALS, sum = 0;
    for (long i = me; i < INTERVALS; i += npes) {
        double x = h * ((double)i + 0.5);
        sum += 4.0 / (1.0 + x * x);
    }
    part = h * sum;

    shmem_double_sum_reduce(SHMEM_TEAM_WORLD, &pi, &part, 1);

    if (me == 0) {
        double err = fabs(pi - M_PI);
        printf("pi: %d PE%s, %ld intervals: pi is approximately %.15f, error %.2e%s\n", npes,
               npes == 1 ? "" : "s", INTERVALS, pi, err, err < 1e-10 ? "" : "  <-- WRONG");
    }
    shmem_finalize();
    return 0;
}
