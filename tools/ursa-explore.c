/*
 * ursa-explore - runs a program linked with ursa (or run through ursa-run) under N schedules of
 * ursa's schedule exploration, one process per schedule, and stops at the first failure:
 *
 *   ursa-explore [-n N] [-s random|pct[:D[:K]]] [--seed S] [--vps V] [-v] -- PROGRAM ARGS...
 *
 * Schedule i runs PROGRAM with URSA_EXPLORE=<strategy> URSA_SEED=<S+i> (URSA_VPS=V when given) and
 * URSA_EXPLORE_REPORT_FD naming a pipe the run writes its step count to; its output goes to a
 * temporary file that is shown only when it fails.  A failure (a nonzero exit status, a signal)
 * prints the run's output (with ursa's own report of the schedule) and the replay command, and
 * the exit status is 1; 0 when every schedule passed; 2 for bad usage.  pct's K (the estimated
 * steps) is the largest step count of the schedules before unless -s gives it.  At the end it
 * prints the schedules run, the steps, the time and the steps per second.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void usage(void) {
  fprintf(stderr, "usage: ursa-explore [-n SCHEDULES] [-s random|pct[:DEPTH[:STEPS]]] [--seed S] [--vps V] [-v] "
                  "-- PROGRAM [ARGS...]\n");
  exit(2);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_u64(const char *s, unsigned long long *out) {
  char *end;
  if (s == NULL || *s < '0' || *s > '9') return -1;
  errno = 0;
  *out = strtoull(s, &end, 0);
  return errno || *end ? -1 : 0;
}

int main(int argc, char **argv) {
  unsigned long long n = 1000, seed = 0, vps = 0, i, k = 200, kmax = 0, steps_all = 0;
  const char *strategy = "pct:3";
  unsigned depth = 0;
  int verbose = 0, argi, k_given = 0;
  double t0;
  for (argi = 1; argi < argc; argi++) {
    const char *a = argv[argi];
    if (strcmp(a, "--") == 0) { argi++; break; }
    if (strcmp(a, "-n") == 0 && argi + 1 < argc) { if (parse_u64(argv[++argi], &n) || n == 0) usage(); }
    else if (strcmp(a, "-s") == 0 && argi + 1 < argc) strategy = argv[++argi];
    else if (strcmp(a, "--seed") == 0 && argi + 1 < argc) { if (parse_u64(argv[++argi], &seed)) usage(); }
    else if (strcmp(a, "--vps") == 0 && argi + 1 < argc) { if (parse_u64(argv[++argi], &vps) || vps == 0 || vps > 4096) usage(); }
    else if (strcmp(a, "-v") == 0) verbose = 1;
    else usage();
  }
  if (argi >= argc) usage();
  if (strcmp(strategy, "random") != 0) {                   /* pct[:D[:K]] */
    unsigned long long d = 3;
    const char *p = strategy + 3;
    char *end;
    if (strncmp(strategy, "pct", 3) != 0) usage();
    if (*p == ':') {
      d = strtoull(p + 1, &end, 10);
      if (end == p + 1) usage();
      p = end;
      if (*p == ':') {
        k = strtoull(p + 1, &end, 10);
        if (end == p + 1 || k == 0) usage();
        k_given = 1;
        p = end;
      }
    }
    if (*p != '\0' || d < 1 || d > 16) usage();
    depth = (unsigned)d;
  }
  t0 = now_s();
  for (i = 0; i < n; i++) {
    char strat[64], seedbuf[32], fdbuf[16], buf[64];
    int p[2], out, status;
    pid_t pid;
    ssize_t got = 0, r;
    unsigned long long steps = 0;
    if (depth) snprintf(strat, sizeof strat, "pct:%u:%llu", depth, k_given || kmax == 0 ? k : kmax);
    else snprintf(strat, sizeof strat, "random");
    snprintf(seedbuf, sizeof seedbuf, "%llu", seed + i);
    if (pipe(p) != 0 || (out = memfd_create("ursa-explore-output", MFD_CLOEXEC)) < 0) {
      perror("ursa-explore");
      return 2;
    }
    fflush(NULL);
    pid = fork();
    if (pid < 0) { perror("ursa-explore: fork"); return 2; }
    if (pid == 0) {
      close(p[0]);
      snprintf(fdbuf, sizeof fdbuf, "%d", p[1]);
      setenv("URSA_EXPLORE", strat, 1);
      setenv("URSA_SEED", seedbuf, 1);
      unsetenv("URSA_REPLAY");
      setenv("URSA_EXPLORE_REPORT_FD", fdbuf, 1);
      if (vps) { char v[16]; snprintf(v, sizeof v, "%llu", vps); setenv("URSA_VPS", v, 1); }
      if (!verbose) { dup2(out, 1); dup2(out, 2); }
      execvp(argv[argi], argv + argi);
      fprintf(stderr, "ursa-explore: %s: %s\n", argv[argi], strerror(errno));
      _exit(127);
    }
    close(p[1]);
    while ((r = read(p[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0) got += r;
    buf[got > 0 ? got : 0] = '\0';
    close(p[0]);
    (void)sscanf(buf, "steps %llu", &steps);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    steps_all += steps;
    if (steps > kmax) kmax = steps;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      char cbuf[4096];
      lseek(out, 0, SEEK_SET);
      while ((r = read(out, cbuf, sizeof cbuf)) > 0) (void)!write(2, cbuf, (size_t)r);
      if (WIFSIGNALED(status))
        fprintf(stderr, "ursa-explore: schedule %llu of %llu FAILED: signal %d (%s)\n", i + 1, n,
                WTERMSIG(status), strsignal(WTERMSIG(status)));
      else
        fprintf(stderr, "ursa-explore: schedule %llu of %llu FAILED: exit status %d%s\n", i + 1, n,
                WEXITSTATUS(status), WEXITSTATUS(status) == 3 ? " (deadlock)" : WEXITSTATUS(status) == 127 ? " (not run)" : "");
      fprintf(stderr, "ursa-explore: replay: URSA_EXPLORE=%s URSA_REPLAY=%llu", strat, seed + i);
      if (vps) fprintf(stderr, " URSA_VPS=%llu", vps);
      for (r = argi; r < argc; r++) fprintf(stderr, " %s", argv[r]);
      fprintf(stderr, "\n");
      printf("failed after %llu schedules: seed %llu, strategy %s\n", i + 1, seed + i, strat);
      return 1;
    }
    close(out);
  }
  {
    double t = now_s() - t0;
    printf("passed %llu schedules (%s, seeds %llu..%llu): %llu steps in %.2f s, %.0f steps/s, %.0f schedules/s\n",
           n, depth ? "pct" : "random", seed, seed + n - 1, steps_all, t, t > 0 ? (double)steps_all / t : 0.0,
           t > 0 ? (double)n / t : 0.0);
  }
  return 0;
}
