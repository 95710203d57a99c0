/* STREAM's timings beside a read-only scan, on one machine: how far STREAM's one-shot "rough guideline" timing of
   its in-place scale (a[j] = 2 a[j]) lies from its best-of-10 kernels, and how fast a read-only scan runs beside the
   1:1 read-write in-place scale. Used to read a published STREAM header as a read bandwidth
   (benchmarks/results/memory-mix.md). Build: gcc -O3 -march=x86-64-v3 -fopenmp -static memory_mix.c */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

static double now(void) { struct timeval t; gettimeofday(&t, NULL); return t.tv_sec + t.tv_usec * 1e-6; }

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000000L;
    int reps = argc > 2 ? atoi(argv[2]) : 10;
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)), *c = malloc(n * sizeof(double));
    if (!a || !b || !c) { fprintf(stderr, "out of memory\n"); return 1; }
    long j;
#pragma omp parallel for schedule(static)
    for (j = 0; j < n; j++) { a[j] = 1.0; b[j] = 2.0; c[j] = 0.0; }
    double t = now();
#pragma omp parallel for schedule(static)
    for (j = 0; j < n; j++) a[j] = 2.0E0 * a[j];
    double rough = now() - t;
    double best[6] = {1e30, 1e30, 1e30, 1e30, 1e30, 1e30};
    unsigned long sink = 0;
    for (int k = 0; k < reps; k++) {
        double s[7];
        s[0] = now();
#pragma omp parallel for schedule(static)
        for (j = 0; j < n; j++) c[j] = a[j];
        s[1] = now();
#pragma omp parallel for schedule(static)
        for (j = 0; j < n; j++) b[j] = 3.0 * c[j];
        s[2] = now();
#pragma omp parallel for schedule(static)
        for (j = 0; j < n; j++) c[j] = a[j] + b[j];
        s[3] = now();
#pragma omp parallel for schedule(static)
        for (j = 0; j < n; j++) a[j] = b[j] + 3.0 * c[j];
        s[4] = now();
#pragma omp parallel for schedule(static)
        for (j = 0; j < n; j++) a[j] = 0.5 * a[j];
        s[5] = now();
        unsigned long sum = 0; /* an integer OR: vectorises, unlike a strict-order FP sum */
        const unsigned long *u = (const unsigned long *)a;
#pragma omp parallel for schedule(static) reduction(| : sum)
        for (j = 0; j < n; j++) sum |= u[j];
        s[6] = now();
        sink |= sum;
        if (k == 0) continue; /* STREAM drops the first pass */
        for (int i = 0; i < 6; i++) if (s[i + 1] - s[i] < best[i]) best[i] = s[i + 1] - s[i];
    }
    double B = (double)n * sizeof(double);
    printf("{\"threads\": %d, \"elements\": %ld, \"rough_inplace_scale_Bps\": %.4g, \"copy_Bps\": %.4g, "
           "\"scale_Bps\": %.4g, \"add_Bps\": %.4g, \"triad_Bps\": %.4g, \"inplace_scale_Bps\": %.4g, "
           "\"read_Bps\": %.4g, \"sink\": %lu}\n",
           omp_get_max_threads(), n, 2 * B / rough, 2 * B / best[0], 2 * B / best[1], 3 * B / best[2],
           3 * B / best[3], 2 * B / best[4], B / best[5], sink);
    return 0;
}
