/*
 * pthread_socket_pingpong.c - a one-byte ping-pong over a socketpair between two POSIX threads,
 * each blocking in read() and write(): natively two kernel threads woken by the kernel; under
 * ursa-run (bench/<this>_ursa_run) two ursa threads of one VP whose read waits in the VP's I/O
 * engine (src/pthread/io.c).  The same binary, built against the system's <pthread.h>; it finds
 * libursa-pthread.so with dlsym only to label its RESULT line (impl pthread or ursa-run).
 *   value = ns per round trip = interval / N                                   unit ns/pass
 *
 * Usage: pthread_socket_pingpong [N = 100,000 round trips]
 */
#define _GNU_SOURCE
#include "../bench_common.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

static uint64_t n_rounds;
static int sv[2];

static void *pong(void *arg) {
  uint64_t i;
  char c;
  (void)arg;
  for (i = 0; i < n_rounds; i++) {
    if (read(sv[1], &c, 1) != 1) bench_die("read", errno);
    c++;
    if (write(sv[1], &c, 1) != 1) bench_die("write", errno);
  }
  return NULL;
}

int main(int argc, char **argv) {
  pthread_t b;
  uint64_t i, t0, t1;
  char c = 0, want = 0;
  void *(*ursa_self)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "ursa_self");
  const char *impl = ursa_self && ursa_self() ? "ursa-run" : "pthread";
  n_rounds = bench_arg(argc, argv, 100000);
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) bench_die("socketpair", errno);
  BENCH_CHECK(pthread_create(&b, NULL, pong, NULL));
  t0 = bench_now_ns();
  for (i = 0; i < n_rounds; i++) {
    if (write(sv[0], &c, 1) != 1) bench_die("write", errno);
    if (read(sv[0], &c, 1) != 1) bench_die("read", errno);
    want++;
    if (c != want) { fprintf(stderr, "pthread_socket_pingpong: got %d, not %d\n", c, want); return 1; }
  }
  t1 = bench_now_ns();
  BENCH_CHECK(pthread_join(b, NULL));
  bench_result("socket-pingpong", impl, (double)(t1 - t0) / (double)n_rounds, "ns/pass", -1, n_rounds);
  return 0;
}
