/*
 * ursa_socket_pingpong.c - a one-byte ping-pong over a socketpair between two ursa threads of one
 * VP (ursa_read and ursa_write, which block only their thread): the peer is
 * peers/pthread_socket_pingpong.c, the same between two POSIX threads (issue #18: >= 2x).
 *   value = ns per round trip = interval / N                                   unit ns/pass
 * Each byte is checked (B adds one).
 *
 * Usage: ursa_socket_pingpong [N = 100,000 round trips]
 */
#include "bench_common.h"
#include "ursa.h"

#include <sys/socket.h>

static uint64_t n_rounds;
static int sv[2];

static void *pong(void *arg) {
  uint64_t i;
  char c;
  (void)arg;
  for (i = 0; i < n_rounds; i++) {
    if (ursa_read(sv[1], &c, 1) != 1) bench_die("ursa_read", EIO);
    c++;
    if (ursa_write(sv[1], &c, 1) != 1) bench_die("ursa_write", EIO);
  }
  return NULL;
}

int main(int argc, char **argv) {
  ursa_config_t cfg = { 0 };
  ursa_thread_t b;
  uint64_t i, t0, t1;
  char c = 0, want = 0;
  n_rounds = bench_arg(argc, argv, 100000);
  cfg.vps = 1;
  BENCH_CHECK(ursa_init(&cfg));
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) bench_die("socketpair", errno);
  BENCH_CHECK(ursa_create(&b, NULL, pong, NULL));
  t0 = bench_now_ns();
  for (i = 0; i < n_rounds; i++) {
    if (ursa_write(sv[0], &c, 1) != 1) bench_die("ursa_write", EIO);
    if (ursa_read(sv[0], &c, 1) != 1) bench_die("ursa_read", EIO);
    want++;
    if (c != want) { fprintf(stderr, "ursa_socket_pingpong: got %d, not %d\n", c, want); return 1; }
  }
  t1 = bench_now_ns();
  BENCH_CHECK(ursa_join(b, NULL));
  bench_result("socket-pingpong", "ursa", (double)(t1 - t0) / (double)n_rounds, "ns/pass", -1, n_rounds);
  BENCH_CHECK(ursa_close(sv[0]));
  BENCH_CHECK(ursa_close(sv[1]));
  return ursa_fini() != 0;
}
