/* examples/hello.c - the program of README and docs/GUIDE.md. */
#include <stdio.h>
#include <ursa.h>

static ursa_sem_t done;

static void *worker(void *arg) {
  printf("hello from thread %llu\n", (unsigned long long)ursa_thread_id(ursa_self()));
  ursa_sem_post(&done);
  return arg;
}

int main(void) {
  ursa_thread_t t;
  void *r;
  ursa_init(NULL);                     /* main is now ursa thread 1 */
  ursa_sem_init(&done, 0);
  ursa_create(&t, NULL, worker, (void *)42);
  ursa_sem_wait(&done);                /* blocks main: the worker runs */
  ursa_join(t, &r);
  printf("worker returned %ld\n", (long)r);
  return ursa_fini();
}
