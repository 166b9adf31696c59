/*
 * heap.h - the timer heaps' algorithm, written once: a 1-based binary min-heap on a 64-bit key
 * (a deadline), kept in an array whose entries know their own index (so that a cancelled timer
 * is removed in O(log n) from the middle).  Instantiated per entry type by
 *     URSA__HEAP(prefix, type, KEY, MOVED)
 * where KEY(e) is entry e's deadline and MOVED(e, i) records that e now sits at index i.  It
 * defines prefix_up(a, i), prefix_down(a, n, i) and prefix_remove(a, n, i), which removes the
 * entry at index i of the n in a[1..n] and leaves n - 1 (the caller stores the new count: the
 * heaps' owners publish it with their own memory order).  a[0] is unused.  Users: the VPs'
 * thread timers (src/sched/sched.c) and the stackless executors' (src/pt/pt_sched.c).
 */
#ifndef URSA_CORE_HEAP_H
#define URSA_CORE_HEAP_H

#include <stdint.h>

#define URSA__HEAP(prefix, type, KEY, MOVED)                                                  \
  static inline void prefix##_up(type *a, uint32_t i) {                                       \
    type v_ = a[i];                                                                           \
    while (i > 1 && KEY(a[i / 2]) > KEY(v_)) {                                                \
      a[i] = a[i / 2];                                                                        \
      MOVED(a[i], i);                                                                         \
      i /= 2;                                                                                 \
    }                                                                                         \
    a[i] = v_;                                                                                \
    MOVED(a[i], i);                                                                           \
  }                                                                                           \
  static inline void prefix##_down(type *a, uint32_t n, uint32_t i) {                         \
    type v_ = a[i];                                                                           \
    for (;;) {                                                                                \
      uint32_t c_ = 2 * i;                                                                    \
      if (c_ > n) break;                                                                      \
      if (c_ + 1 <= n && KEY(a[c_ + 1]) < KEY(a[c_])) c_++;                                   \
      if (KEY(a[c_]) >= KEY(v_)) break;                                                       \
      a[i] = a[c_];                                                                           \
      MOVED(a[i], i);                                                                         \
      i = c_;                                                                                 \
    }                                                                                         \
    a[i] = v_;                                                                                \
    MOVED(a[i], i);                                                                           \
  }                                                                                           \
  static inline void prefix##_remove(type *a, uint32_t n, uint32_t i) {                       \
    if (i == n) return;                              /* the last entry: nothing moves */       \
    a[i] = a[n];                                                                              \
    MOVED(a[i], i);                                                                           \
    if (i > 1 && KEY(a[i / 2]) > KEY(a[i])) prefix##_up(a, i);                                \
    else prefix##_down(a, n - 1, i);                                                          \
  }

#endif /* URSA_CORE_HEAP_H */
