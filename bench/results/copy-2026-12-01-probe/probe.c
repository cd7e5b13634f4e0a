/* probe.c: how long loading one word per line of a source 4 KiB takes (TSC ticks), cached after
 * various copies and streaming; links sym__copy_nt from libsymutil: gcc -O2 probe.c -o probe
 * -Lbuild -lsymutil -Wl,-rpath,build; taskset -c 0 ./probe. Output: probe.txt. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <x86intrin.h>
void sym__copy_nt(void *dst, const void *src, size_t n);
static inline uint64_t probe(const char *s) {
  uint64_t t0 = __rdtsc(); uint64_t acc = 0;
  for (int i = 0; i < 4096; i += 64) acc += *(const volatile uint64_t *)(s + i);
  _mm_lfence(); uint64_t t = __rdtsc() - t0; __asm__ volatile("" :: "r"(acc)); return t; }
static void hist(const char *what, size_t n, uint64_t *h) { printf("%8zu %-22s", n, what); for (int b = 0; b < 10; b++) printf(" %5lu", h[b]); printf("\n"); }
static void add(uint64_t *h, uint64_t t) { int b = 0; while (b < 9 && t > (50ull << b)) b++; h[b]++; }
int main(void) {
  size_t span = (size_t)256 << 20; char *s = aligned_alloc(4096, span), *d = aligned_alloc(4096, span); memset(s, 1, span); memset(d, 2, span);
  printf("ticks <=50 100 200 400 800 1600 3200 6400 12800 more\n");
  for (size_t n = 32768; n <= (512<<10); n *= 4) {
    uint64_t a[10] = {0}, b[10] = {0}, c[10] = {0}, e[10] = {0}; size_t nsl = span / n - 1;
    for (long i = 0; i < 3000; i++) { sym__copy_nt(d, s, n); add(a, probe(s)); memcpy(d, s, n); add(b, probe(s)); memcpy(d, s, n); add(e, probe(s)); }
    for (long i = 0; i < 3000; i++) { char *ss = s + (i % nsl) * n; add(c, probe(ss)); sym__copy_nt(d + (i % nsl) * n, ss, n); }
    hist("cached, after NT", n, a); hist("cached, after 1 memcpy", n, b); hist("cached, after 2 memcpy", n, e); hist("stream, after NT", n, c); }
}
