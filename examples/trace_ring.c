/*
 * examples/trace_ring.c - a thread ring on two VPs, to look at with the scheduler trace
 * (docs/TRACE.md):
 *   URSA_TRACE=ring.json ./trace_ring && python3 tools/trace_plot.py ring.json ring.png
 * Six threads pass two tokens round a ring of semaphores and work about 20 us per hop.  ring-0 to
 * ring-3 are bound to VP 0, 1, 0, 1, so each hop between them wakes a thread on the other VP;
 * ring-4 and ring-5 start on VP 0 and are free: woken by a thread on VP 1, they move there (a
 * woken thread runs on its waker's VP).  The trace shows slices, wake-ups across VPs, those two
 * migrations, and each VP sleeping while both tokens are on the other one.
 */
#define _POSIX_C_SOURCE 200809L             /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <ursa.h>

#define N    6
#define LAPS 12

static ursa_sem_t sem[N];

static void work_us(unsigned us) {                  /* stands for real work */
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < (long)us * 1000);
}

static void *member(void *arg) {
  int i = (int)(intptr_t)arg, lap;
  for (lap = 0; lap < LAPS; lap++) {
    ursa_sem_wait(&sem[i]);                         /* the token */
    work_us(20);
    ursa_sem_post(&sem[(i + 1) % N]);               /* pass it on */
  }
  return NULL;
}

int main(void) {
  ursa_config_t c = {0};
  ursa_thread_t t[N];
  int i;
  c.vps = 2;
  if (ursa_init(&c) != 0) return 1;
  for (i = 0; i < N; i++) {
    ursa_attr_t a;
    char name[16];
    ursa_sem_init(&sem[i], 0);
    ursa_attr_init(&a);
    snprintf(name, sizeof name, "ring-%d", i);
    ursa_attr_setname(&a, name);
    ursa_attr_setvp(&a, i < 4 ? i % 2 : 0);
    ursa_attr_setbound(&a, i < 4);
    ursa_create(&t[i], &a, member, (void *)(intptr_t)i);
    ursa_attr_destroy(&a);
  }
  ursa_sleep_ns(200000);                            /* every member waits for its token */
  ursa_sem_post(&sem[0]);                           /* two tokens */
  ursa_sem_post(&sem[3]);
  for (i = 0; i < N; i++) ursa_join(t[i], NULL);
  printf("ring done: %d threads, %d laps\n", N, LAPS);
  return ursa_fini();
}
