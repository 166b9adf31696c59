/*
 * signal_cost.c - what a periodic timer signal costs the thread it interrupts, on this machine:
 * the price of ursa's balancing tick (URSA_ROTATE_US) and of cp-ts's quantum, measured apart
 * from ursa (no ursa call here).  A POSIX timer on CLOCK_MONOTONIC signals this kernel thread
 * (SIGEV_THREAD_ID, as src/model/preempt.c arms its timers) every <period> us with an empty
 * handler while the thread runs a fixed amount of work; the same work with no timer is the
 * reference.  Two kinds of work:
 *   compute  a multiply-add chain in registers (40 x 20M steps)
 *   stream   40 passes of a radix sort's count and scatter over 2^22 keys (16 MiB each way), the
 *            loops of bench/radix_sort.c at radix 2^8, which live in the caches and memory
 * Each run alternates the two settings (no timer, timer) <rounds> times and prints the medians:
 *
 *   RESULT bench=signal-cost-<work> impl=timer-<period>us value=<ns per signal> unit=ns
 *          n=<signals> base_ms=.. timer_ms=.. slowdown=<ratio>
 *
 * where ns per signal = (median time with the timer - median time without) / signals per run.
 * Usage: signal_cost [compute|stream|both = both] [period us = 1000] [rounds = 5]
 */
#define _GNU_SOURCE
#include "bench_common.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile sig_atomic_t hits;
static uint32_t *keys, *out;
enum { NKEYS = 1u << 22, REPS = 40 };

static void on_signal(int sig) {
  (void)sig;
  hits++;
}

static uint64_t work_compute(void) {
  uint64_t x = 1;
  for (int rep = 0; rep < REPS; rep++)
    for (long i = 0; i < 20000000; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

static uint64_t work_stream(void) {
  uint64_t s = 0;
  for (int rep = 0; rep < REPS; rep++) {
    uint32_t c[256] = { 0 }, sum = 0;
    for (uint32_t i = 0; i < NKEYS; i++) c[(keys[i] >> 8) & 255]++;
    for (int d = 0; d < 256; d++) { uint32_t x = c[d]; c[d] = sum; sum += x; }
    for (uint32_t i = 0; i < NKEYS; i++) { uint32_t k = keys[i]; out[c[(k >> 8) & 255]++] = k; }
    s += out[rep];
  }
  return s;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void measure(const char *name, uint64_t (*work)(void), timer_t tm, long period_us, int rounds) {
  double base[64], with[64], sig[64];
  volatile uint64_t sink = 0;
  for (int r = 0; r < rounds; r++) {
    for (int on = 0; on < 2; on++) {
      struct itimerspec its;
      uint64_t t0, t1;
      memset(&its, 0, sizeof its);
      if (on) {
        its.it_value.tv_sec = its.it_interval.tv_sec = period_us / 1000000;
        its.it_value.tv_nsec = its.it_interval.tv_nsec = (period_us % 1000000) * 1000;
      }
      hits = 0;
      if (timer_settime(tm, 0, &its, NULL) != 0) bench_die("timer_settime", errno);
      t0 = bench_now_ns();
      sink += work();
      t1 = bench_now_ns();
      memset(&its, 0, sizeof its);
      timer_settime(tm, 0, &its, NULL);
      if (on) { with[r] = (double)(t1 - t0); sig[r] = (double)hits; }
      else base[r] = (double)(t1 - t0);
    }
  }
  {
    double b = median(base, rounds), w = median(with, rounds), n = median(sig, rounds);
    if (n < 1) bench_die("the timer sent no signal", 0);
    printf("RESULT bench=signal-cost-%s impl=timer-%ldus value=%.1f unit=ns n=%.0f base_ms=%.2f timer_ms=%.2f "
           "slowdown=%.4f\n", name, period_us, (w - b) / n, n, b / 1e6, w / 1e6, w / b);
  }
  (void)sink;
}

int main(int argc, char **argv) {
  const char *which = argc > 1 ? argv[1] : "both";
  long period_us = argc > 2 ? atol(argv[2]) : 1000;
  int rounds = argc > 3 ? atoi(argv[3]) : 5;
  struct sigaction sa;
  struct sigevent sev;
  timer_t tm;
  if (argc > 4 || period_us < 10 || period_us > 1000000 || rounds < 1 || rounds > 64 ||
      (strcmp(which, "compute") && strcmp(which, "stream") && strcmp(which, "both"))) {
    fprintf(stderr, "usage: signal_cost [compute|stream|both] [period us, 10..1000000 = 1000] [rounds 1..64 = 5]\n");
    return 2;
  }
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGRTMIN + 5, &sa, NULL) != 0) bench_die("sigaction", errno);
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGRTMIN + 5;
  sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  if (timer_create(CLOCK_MONOTONIC, &sev, &tm) != 0) bench_die("timer_create", errno);
  if (strcmp(which, "compute") != 0) {
    keys = malloc(NKEYS * sizeof *keys);
    out = malloc(NKEYS * sizeof *out);
    if (!keys || !out) bench_die("out of memory", ENOMEM);
    for (uint32_t i = 0; i < NKEYS; i++) keys[i] = i * 2654435761u;
    memset(out, 0, NKEYS * sizeof *out);
  }
  if (strcmp(which, "stream") != 0) measure("compute", work_compute, tm, period_us, rounds);
  if (strcmp(which, "compute") != 0) measure("stream", work_stream, tm, period_us, rounds);
  timer_delete(tm);
  free(keys);
  free(out);
  return 0;
}
