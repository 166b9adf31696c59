/*
 * keys.c - thread-specific keys (ursa_key_create, ursa_setspecific, ...).
 *
 * A process-wide table of URSA_KEYS_MAX entries, each with a generation; a key value is
 * generation << 8 | index, so a deleted key (or one never created) is detected.  Each thread's
 * values live in an array allocated at its first ursa_setspecific (so threads that use no key
 * cost nothing), stamped with the generation they were set under.  The destructors run when a
 * thread finishes (src/sched/thread.c calls ursa__keys_run_destructors), before it is released.
 * Executed only by ursa threads; a key's table entry is read by every VP (relaxed atomics).
 */
#include "vp.h"

#include <stdlib.h>


struct ursa__key {
  uint32_t gen;                             /* odd while in use */
  void   (*destructor)(void *);
};
static struct ursa__key keys[URSA_KEYS_MAX];
/* Create and delete change the table under keys_lock: with several VPs two creates could
 * otherwise take the same free entry (found by tests/test_fuzz.c: one key handed out twice), and
 * two deletes of one key could make it odd, "in use", again. */
static ursa__spin_t keys_lock;

static uint32_t key_gen(int i) { return __atomic_load_n(&keys[i].gen, __ATOMIC_ACQUIRE); }

static int key_index(ursa_key_t key) {
  uint32_t i = key & 0xff, gen = key >> 8, g;
  if (i >= URSA_KEYS_MAX) return -1;
  g = key_gen((int)i);
  if (!(g & 1) || (g & 0xffffff) != gen) return -1;
  return (int)i;
}

int ursa_key_create(ursa_key_t *key, void (*destructor)(void *)) {
  int i;
  if (key == NULL) return -EINVAL;
  if (ursa__tls_vp == NULL) return ursa__novp();
  ursa__spin_lock(&keys_lock);
  for (i = 0; i < URSA_KEYS_MAX; i++) {
    if (!(keys[i].gen & 1)) {
      uint32_t g = (keys[i].gen + 1) & 0xffffff;     /* odd: in use */
      __atomic_store_n(&keys[i].destructor, destructor, __ATOMIC_RELAXED);   /* read unlocked at exit */
      __atomic_store_n(&keys[i].gen, g, __ATOMIC_RELEASE);
      ursa__spin_unlock(&keys_lock);
      *key = (g << 8) | (uint32_t)i;
      return 0;
    }
  }
  ursa__spin_unlock(&keys_lock);
  return -EAGAIN;
}

int ursa_key_delete(ursa_key_t key) {
  int i;
  if (ursa__tls_vp == NULL) return ursa__novp();
  ursa__spin_lock(&keys_lock);
  if ((i = key_index(key)) < 0) { ursa__spin_unlock(&keys_lock); return -EINVAL; }
  __atomic_store_n(&keys[i].destructor, NULL, __ATOMIC_RELAXED);
  __atomic_store_n(&keys[i].gen, (keys[i].gen + 1) & 0xffffff, __ATOMIC_RELEASE);   /* even: free */
  ursa__spin_unlock(&keys_lock);
  return 0;
}

int ursa_setspecific(ursa_key_t key, const void *value) {
  int i = key_index(key);
  struct ursa__thread *t;
  URSA_VP_OR_RETURN(vp);
  if (i < 0) return -EINVAL;
  t = vp->cur;
  if (t->keys == NULL && (URSA__FAIL() || (t->keys = calloc(URSA_KEYS_MAX, sizeof *t->keys)) == NULL))
    return -ENOMEM;
  t->keys[i].value = (void *)(uintptr_t)value;
  t->keys[i].gen = key_gen(i);
  return 0;
}

void *ursa_getspecific(ursa_key_t key) {
  int i = key_index(key);
  struct ursa__vp *vp = ursa__tls_vp;
  struct ursa__thread *t;
  if (i < 0 || vp == NULL || (t = vp->cur)->keys == NULL) return NULL;
  return t->keys[i].gen == key_gen(i) ? t->keys[i].value : NULL;
}

void ursa__keys_run_destructors(struct ursa__thread *t) {
  int round, i, again = 1;
  for (round = 0; t->keys && again && round < URSA_KEY_DESTRUCTOR_ITERATIONS; round++) {
    again = 0;
    for (i = 0; i < URSA_KEYS_MAX; i++) {
      void *v = t->keys[i].value;
      void (*d)(void *) = __atomic_load_n(&keys[i].destructor, __ATOMIC_RELAXED);
      if (v && t->keys[i].gen == key_gen(i) && d) {   /* (a key deleted meanwhile: its old
                                                         destructor or none, as POSIX allows) */
        t->keys[i].value = NULL;
        d(v);
        again = 1;
      }
    }
  }
}
