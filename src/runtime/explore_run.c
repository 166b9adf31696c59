/*
 * explore_run.c - ursa_explore(): runs a test function under many schedules, one forked child per
 * schedule (src/explore/ explores one run; this drives many).
 *
 * Each child calls ursa_init with exploration on (strategy, seed + i, the VPs asked for), runs
 * fn(arg) on its main thread and exits with 1 when fn returned nonzero, else 0 (without ursa_fini:
 * threads left running do not make a schedule fail; with _exit, after the exploration's report: the
 * parent's atexit handlers are not the child's).  Before it exits the child writes its step
 * count to a pipe; pct's estimate K of the next schedules is the largest count seen so far (the
 * first schedule uses the strategy's own, or 200), and K is part of the strategy each child gets,
 * so a failing seed with the printed strategy replays the run.  Called from a plain kernel thread
 * with the runtime not initialized.
 */
#define _GNU_SOURCE
#include "runtime.h"
#include "../explore/explore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t read_steps(int fd) {
  char buf[64];
  ssize_t n, got = 0;
  unsigned long long s = 0;
  while (got < (ssize_t)sizeof buf - 1 && (n = read(fd, buf + got, sizeof buf - 1 - (size_t)got)) > 0) got += n;
  buf[got < 0 ? 0 : got] = '\0';
  if (sscanf(buf, "steps %llu", &s) != 1) return 0;
  return s;
}

int ursa_explore(int (*fn)(void *arg), void *arg, ursa_explore_opts_t *o) {
  const char *strategy;
  int kind;
  unsigned depth, i, n;
  uint64_t k, kmax = 0;
  bool k_given;
  if (fn == NULL || o == NULL) return -EINVAL;
  if (ursa__g.initialized || ursa__tls_vp != NULL) return -EBUSY;
  strategy = o->strategy ? o->strategy : "pct:3";
  if (ursa__explore_parse(strategy, &kind, &depth, &k) != 0) return -EINVAL;
  k_given = strchr(strategy, ':') != NULL && strchr(strchr(strategy, ':') + 1, ':') != NULL;
  n = o->schedules ? o->schedules : 1000;
  o->ran = 0;
  o->steps = 0;
  o->failed_seed = 0;
  o->replay[0] = '\0';
  fflush(NULL);                                      /* nothing buffered is written twice */
  for (i = 0; i < n; i++) {
    char strat[96];
    int p[2], status;
    pid_t pid;
    uint64_t seed = o->seed + i, steps;
    if (depth != 0) snprintf(strat, sizeof strat, "pct:%u:%llu", depth,
                             (unsigned long long)(k_given || kmax == 0 ? k : kmax));
    else snprintf(strat, sizeof strat, "random");
    if (pipe2(p, O_CLOEXEC) != 0) return -errno;
    pid = fork();
    if (pid < 0) { int e = errno; close(p[0]); close(p[1]); return -e; }
    if (pid == 0) {
      ursa_config_t c;
      int r;
      close(p[0]);
      memset(&c, 0, sizeof c);
      c.explore = strat;
      c.seed = seed;
      c.vps = o->vps ? o->vps : 1;
      ursa__explore_report_to(p[1]);
      if ((r = ursa_init(&c)) != 0) {
        fprintf(stderr, "ursa_explore: ursa_init: %s\n", ursa_strerror(r));
        _exit(2);
      }
      r = fn(arg);
      ursa__explore_exit(r != 0);                    /* reports a failure; _exit */
    }
    close(p[1]);
    steps = read_steps(p[0]);
    close(p[0]);
    while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) return -errno;
    }
    o->ran++;
    o->steps += steps;
    if (steps > kmax) kmax = steps;
    if (o->verbose)
      fprintf(stderr, "ursa_explore: schedule %u, %s seed %llu: %llu steps, %s\n", i, strat,
              (unsigned long long)seed, (unsigned long long)steps,
              WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "passed" : "FAILED");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      o->failed_seed = seed;
      snprintf(o->replay, sizeof o->replay, "%s", strat);
      return 1;
    }
  }
  return 0;
}
