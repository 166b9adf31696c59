/*
 * examples/pingpong.c - a one-byte ping-pong over a socketpair between two ursa threads (ursa_read
 * and ursa_write, one VP), and the same between two POSIX threads (blocking read and write): the
 * round-trip time of each, as issue #18 compares them.
 *
 *   pingpong [ROUNDS]      default 200000; prints ns per round trip for both
 *
 * It also times the floor under both: the same four socket operations per round trip (a one-byte
 * write and read each way) made by one thread that never waits, so that what each kind of thread
 * adds to the kernel's own work is seen (on a VM whose socket calls cost microseconds, that work
 * bounds every ratio).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <ursa.h>

static int sv[2];
static long rounds;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *ursa_echo(void *arg) {
  char c;
  long i;
  for (i = 0; i < rounds; i++)
    if (ursa_read(sv[1], &c, 1) != 1 || ursa_write(sv[1], &c, 1) != 1) return (void *)1;
  return arg;
}

static void *posix_echo(void *arg) {
  char c;
  long i;
  for (i = 0; i < rounds; i++)
    if (read(sv[1], &c, 1) != 1 || write(sv[1], &c, 1) != 1) return (void *)1;
  return arg;
}

int main(int argc, char **argv) {
  ursa_config_t cfg = { 0 };
  ursa_thread_t t;
  pthread_t p;
  double t0, u, k;
  char c = 'x';
  long i;
  double f;
  rounds = argc > 1 ? atol(argv[1]) : 200000;

  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
  t0 = now_ns();
  for (i = 0; i < rounds; i++)
    if (write(sv[0], &c, 1) != 1 || read(sv[1], &c, 1) != 1 || write(sv[1], &c, 1) != 1 || read(sv[0], &c, 1) != 1) return 1;
  f = (now_ns() - t0) / (double)rounds;
  close(sv[0]);
  close(sv[1]);

  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
  if (pthread_create(&p, NULL, posix_echo, NULL) != 0) return 1;
  t0 = now_ns();
  for (i = 0; i < rounds; i++)
    if (write(sv[0], &c, 1) != 1 || read(sv[0], &c, 1) != 1) return 1;
  k = (now_ns() - t0) / (double)rounds;
  pthread_join(p, NULL);
  close(sv[0]);
  close(sv[1]);

  cfg.vps = 1;
  if (ursa_init(&cfg) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
  if (ursa_create(&t, NULL, ursa_echo, NULL) != 0) return 1;
  t0 = now_ns();
  for (i = 0; i < rounds; i++)
    if (ursa_write(sv[0], &c, 1) != 1 || ursa_read(sv[0], &c, 1) != 1) return 1;
  u = (now_ns() - t0) / (double)rounds;
  ursa_join(t, NULL);
  ursa_close(sv[0]);
  ursa_close(sv[1]);
  printf("socketpair ping-pong, %ld round trips: ursa threads (1 VP, %s) %.0f ns, POSIX threads %.0f ns: %.2fx; "
         "the four socket calls alone %.0f ns (ursa adds %.0f, POSIX threads %.0f)\n",
         rounds, ursa_io_engine(), u, k, k / u, f, u - f, k - f);
  return ursa_fini() != 0;
}
