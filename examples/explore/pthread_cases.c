/*
 * pthread_cases.c - three of the bugs of cases.inc written with POSIX threads, for the exploration
 * of an unmodified POSIX-threads program run through ursa-run (docs/GUIDE.md, "Finding
 * concurrency bugs"):
 *   ursa-explore -n 1000 -s pct:3 -- ursa-run ./pthread_cases lost-wakeup|atomicity|lock-order|prodcons
 * It uses nothing of ursa: run alone, it runs on the system's threads.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                           \
  do {                                                                                     \
    if (!(c)) { fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); abort(); } \
  } while (0)

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, m2 = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER, c2 = PTHREAD_COND_INITIALIZER;
static int count, balance = 100, x, y;

static void *lw_consumer(void *arg) {
  (void)arg;
  pthread_mutex_lock(&m);
  if (count == 0) pthread_cond_wait(&c, &m);              /* the bug: should be while */
  count--;
  CHECK(count >= 0);
  pthread_mutex_unlock(&m);
  return NULL;
}
static void *lw_producer(void *arg) {
  int i;
  (void)arg;
  for (i = 0; i < 2; i++) {
    pthread_mutex_lock(&m);
    count++;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
  }
  return NULL;
}
static void *av_withdraw(void *arg) {
  int ok;
  (void)arg;
  pthread_mutex_lock(&m);
  ok = balance >= 60;
  pthread_mutex_unlock(&m);
  if (ok) {                                                 /* the bug: the check is stale */
    pthread_mutex_lock(&m);
    balance -= 60;
    pthread_mutex_unlock(&m);
  }
  return NULL;
}
static void *lo_ab(void *arg) {
  (void)arg;
  pthread_mutex_lock(&m); pthread_mutex_lock(&m2);
  x--; y++;
  pthread_mutex_unlock(&m2); pthread_mutex_unlock(&m);
  return NULL;
}
static void *lo_ba(void *arg) {
  (void)arg;
  pthread_mutex_lock(&m2); pthread_mutex_lock(&m);         /* the bug: the other order */
  y--; x++;
  pthread_mutex_unlock(&m); pthread_mutex_unlock(&m2);
  return NULL;
}
#define PC_CAP 2
#define PC_ITEMS 8
static int buf[PC_CAP], head;
static long sum;
static void *pc_producer(void *arg) {
  int base = (int)(long)arg, i;
  for (i = 1; i <= PC_ITEMS; i++) {
    pthread_mutex_lock(&m);
    while (count == PC_CAP) pthread_cond_wait(&c2, &m);
    buf[(head + count) % PC_CAP] = base + i;
    count++;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
  }
  return NULL;
}
static void *pc_consumer(void *arg) {
  int i;
  (void)arg;
  for (i = 0; i < PC_ITEMS; i++) {
    pthread_mutex_lock(&m);
    while (count == 0) pthread_cond_wait(&c, &m);
    sum += buf[head];
    head = (head + 1) % PC_CAP;
    count--;
    pthread_cond_signal(&c2);
    pthread_mutex_unlock(&m);
  }
  return NULL;
}

static void run(void *(*const *fns)(void *), void *const *args, int n) {
  pthread_t t[8];
  int i;
  for (i = 0; i < n; i++) CHECK(pthread_create(&t[i], NULL, fns[i], args ? args[i] : NULL) == 0);
  for (i = 0; i < n; i++) CHECK(pthread_join(t[i], NULL) == 0);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "lost-wakeup") == 0) {
    void *(*f[])(void *) = { lw_consumer, lw_consumer, lw_producer };
    run(f, NULL, 3);
  } else if (argc == 2 && strcmp(argv[1], "atomicity") == 0) {
    void *(*f[])(void *) = { av_withdraw, av_withdraw };
    run(f, NULL, 2);
    CHECK(balance >= 0);
  } else if (argc == 2 && strcmp(argv[1], "lock-order") == 0) {
    void *(*f[])(void *) = { lo_ab, lo_ba };
    run(f, NULL, 2);
  } else if (argc == 2 && strcmp(argv[1], "prodcons") == 0) {
    void *(*f[])(void *) = { pc_producer, pc_producer, pc_consumer, pc_consumer };
    void *a[] = { (void *)0L, (void *)100L, NULL, NULL };
    run(f, a, 4);
    CHECK(sum == 2 * (PC_ITEMS * (PC_ITEMS + 1) / 2) + 100 * PC_ITEMS);
  } else {
    fprintf(stderr, "usage: %s lost-wakeup|atomicity|lock-order|prodcons\n", argv[0]);
    return 2;
  }
  return 0;
}
