/*
 * pt_ring.c - thread-ring with 503 header-only stackless threads (ursa/pt.h), one struct
 * ursa_pt_sem each, run by a polling loop in main as in the protothreads thread-ring blog post
 * (shared/papers/004): no libursa, no scheduler but the loop below.
 *
 * Thread 1 starts with token N.  A protothread that takes a unit of its semaphore reports its
 * 1-based id when the token is 0; otherwise it hands token - 1 on (signals the next semaphore)
 * and waits again: one pass.  Answer = N mod 503 + 1 (361 for N = 10,000,000).
 *
 * The loop visits every protothread once per sweep, in one of two orders:
 *   optimum   0, 1, ..., 502: the next holder is visited right after the current one, so a sweep
 *             carries the token round the whole ring (503 passes per sweep).
 *   pessimum  502, ..., 1, 0: the next holder has just been visited, so a sweep makes one pass
 *             and 502 calls that find their semaphore at 0.  (The blog: 0.076 s against 18.6 s.)
 *
 * Before the clock starts one sweep with no token runs every protothread to its first wait.  The
 * clock runs from the token's release to the report.
 *   value = ns per pass = interval / N                                      unit ns/pass
 *   bytes: sizeof(struct ursa_pt), the whole state of one protothread       unit bytes/thread
 *
 * Usage: pt_ring [optimum|pessimum|bytes] [N]   (default: all three; N = 10,000,000 for optimum,
 *        1,000,000 for pessimum; bytes takes the thread count, 503, for the n= field)
 * The local continuations are the default (switch); build with -DURSA_LC_IMPL=URSA_LC_ADDRLABELS
 * for labels as values.
 */
#include "bench_common.h"
#include "ursa/pt.h"

#define RING 503

static struct ursa_pt pts[RING];
static struct ursa_pt_sem sems[RING];
static uint64_t token;
static long long answer = -1;

static URSA_PT_THREAD(member(struct ursa_pt *pt, unsigned id)) {
  URSA_PT_BEGIN(pt);
  for (;;) {
    URSA_PT_SEM_WAIT(pt, &sems[id]);
    if (token == 0) {
      answer = id + 1;
      URSA_PT_EXIT(pt);
    }
    token--;
    URSA_PT_SEM_SIGNAL(&sems[id + 1 == RING ? 0 : id + 1]);
  }
  URSA_PT_END(pt);
}

/* Runs the ring for n passes; returns ns per pass. */
static double ring(uint64_t n, int pessimum) {
  uint64_t t0, t1;
  unsigned i;
  answer = -1;
  for (i = 0; i < RING; i++) {
    URSA_PT_INIT(&pts[i]);
    URSA_PT_SEM_INIT(&sems[i], 0);
  }
  for (i = 0; i < RING; i++) member(&pts[i], i);   /* every one to its first wait */

  token = n;
  t0 = bench_now_ns();
  URSA_PT_SEM_SIGNAL(&sems[0]);
  if (!pessimum) {
    while (answer < 0)
      for (i = 0; i < RING; i++) member(&pts[i], i);
  } else {
    while (answer < 0)
      for (i = RING; i-- > 0;) member(&pts[i], i);
  }
  t1 = bench_now_ns();
  return (double)(t1 - t0) / (double)n;
}

static int run(const char *mode, uint64_t n) {
  if (strcmp(mode, "bytes") == 0) {
    bench_result("pt-bytes", "ursa-pt", (double)sizeof(struct ursa_pt), "bytes/thread", -1, n);
    return 0;
  }
  double ns = ring(n, mode[0] == 'p');           /* sets answer */
  bench_result(mode[0] == 'o' ? "pt-ring-optimum" : "pt-ring-pessimum", "ursa-pt", ns, "ns/pass",
               answer, n);
  return answer == bench_ring_answer(n, RING) ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  uint64_t dflt = strcmp(mode, "optimum") == 0 ? 10000000 : strcmp(mode, "pessimum") == 0 ? 1000000
                : RING;
  if (argc == 1) return run("optimum", 10000000) | run("pessimum", 1000000) | run("bytes", RING);
  if (argc > 3 || (strcmp(mode, "optimum") != 0 && strcmp(mode, "pessimum") != 0 &&
                   strcmp(mode, "bytes") != 0)) {
    fprintf(stderr, "usage: %s [optimum|pessimum|bytes] [N > 0]\n", argv[0]);
    return 2;
  }
  return run(mode, bench_arg(argc - 1, argv + 1, dflt));
}
