/*
 * region.c - regions (PCM): groups of threads of which at most one runs at any time.
 *
 * Guarantee and how it is kept
 *   A region r is bound to one VP, r->vp, and its threads run only there (vp.c routes a READY
 *   member to r->vp's inbox, and a VP that pops a member of a region bound elsewhere forwards it).
 *   A VP runs one thread at a time, so no two members ever run at once.
 *   r->vp is written only by the VP it names, inside that VP's switch (ursa__regions_apply, called
 *   from pick()), when the thread being switched out has stopped running user code: so no member
 *   runs anywhere at the moment the binding changes.  The store is a release and every reader's
 *   load an acquire, so the new VP sees everything the members did on the old one.
 *   ursa_region_move only records the wish (r->want) and tells the current VP (x->moves).
 *
 * Where a region lives (issue #22 item 3).  The caller's ursa_region_t holds only a reference:
 * a magic, the index of a record in ursa's own table and that record's generation.  The record
 * (struct ursa__region: binding, wish, member count, the registry's link) is ursa's memory, so
 * the registry never follows a pointer that user memory holds: a region whose storage was freed or
 * overwritten without ursa_region_destroy only leaks its record (until ursa_fini), and every other
 * region goes on.  A reference is valid while its index is in the table, the record's generation
 * is the reference's and the record names this very storage (a copy is not the region); so a
 * second ursa_region_init of a live region is told (-EBUSY) and a destroyed one's reference, in
 * the storage or in an attribute, is -EINVAL.  Generations come from one counter that ursa_fini
 * does not reset, so no reference from before ursa_fini matches a later record.  The table is a
 * fixed array of chunks of records, allocated as needed and freed by ursa_fini; live records are
 * kept in one list under regions_lock, walked only when a move is due; destroyed ones are reused.
 *
 * Automatic balancing (URSA_REGION_BALANCE=1): at a switch, a VP that hosts two or more regions
 * with threads, while another VP is idle and hosts none, hands that VP one whole region (not the
 * region of a thread that goes on running here).  It is the region's owner and none of its
 * members runs, so it moves the binding itself, as ursa__regions_apply does.
 */
#define _GNU_SOURCE
#include "sched_smp.h"

#include <stdlib.h>
#include <string.h>
#if URSA_VALGRIND
#include <valgrind/memcheck.h>                      /* client requests: no-ops natively */
#endif

#define URSA__REGION_MAGIC 0x52474e32u

/* What the caller's ursa_region_t holds. */
struct ursa__region_ref {
  uint32_t magic;
  uint32_t id;                        /* the record's index + 1                              */
  uint32_t gen;                       /* the record's generation when the region was made   */
};
URSA__STATIC_ASSERT_FITS(struct ursa__region_ref, ursa_region_t);

/* A region's record, in ursa's memory. */
struct ursa__region {
  uint32_t             gen;           /* atomic: the live region's generation, 0 when free   */
  uint32_t             nthreads;      /* atomic: members not yet finished                    */
  struct ursa__vp     *vp;            /* atomic: the VP the region runs on                   */
  struct ursa__vp     *want;          /* atomic: where ursa_region_move asked it to go       */
  struct ursa__region *next;          /* the live list or the free list, under regions_lock  */
  const ursa_region_t *user;          /* the storage whose reference names this record       */
  uint32_t             id;            /* index + 1                                           */
};

#define REGION_CHUNK  256u                           /* records per chunk                  */
#define REGION_CHUNKS 4096u                          /* 1,048,576 regions at most           */

static ursa__spin_t regions_lock;                    /* a leaf lock                          */
static struct ursa__region *chunks[REGION_CHUNKS];   /* atomic: set once each, under the lock */
static uint32_t nrecs;                               /* atomic: records handed out so far    */
static struct ursa__region *regions;                 /* live records, under regions_lock     */
static struct ursa__region *free_recs;               /* destroyed records, under regions_lock */
static uint32_t gens;                                /* atomic: the last generation given     */

/* The record with this id (index + 1), NULL when there is none: memory-safe for any value. */
static struct ursa__region *rec_at(uint32_t id) {
  uint32_t i = id - 1u;                              /* id 0: 0xffffffff, out of range */
  struct ursa__region *c;
  if (i >= __atomic_load_n(&nrecs, __ATOMIC_ACQUIRE)) return NULL;   /* pairs with rec_alloc */
  c = __atomic_load_n(&chunks[i / REGION_CHUNK], __ATOMIC_ACQUIRE);
  return c ? &c[i % REGION_CHUNK] : NULL;
}

/* The live record that (id, gen) names, or NULL. */
static struct ursa__region *rec_live(uint32_t id, uint32_t gen) {
  struct ursa__region *x = rec_at(id);
  if (x == NULL || gen == 0 || __atomic_load_n(&x->gen, __ATOMIC_ACQUIRE) != gen) return NULL;
  return x;
}

/* The live record that the reference ref, read from the storage r, names; NULL for none. */
static struct ursa__region *ref_live(const struct ursa__region_ref *ref, const ursa_region_t *r) {
  struct ursa__region *x;
  if (ref->magic != URSA__REGION_MAGIC) return NULL;
  x = rec_live(ref->id, ref->gen);
  return x && __atomic_load_n(&x->user, __ATOMIC_RELAXED) == r ? x : NULL;
}

static struct ursa__region *region_get(ursa_region_t *r) {
  return r ? ref_live((const struct ursa__region_ref *)r, r) : NULL;
}

/* A free record (the caller holds regions_lock): a destroyed one, else the next of the table.
 * NULL with *err: -ENOMEM (no memory for a chunk), -EAGAIN (the table is full). */
static struct ursa__region *rec_alloc(int *err) {
  struct ursa__region *x = free_recs, *c;
  uint32_t n = nrecs;
  if (x != NULL) {
    free_recs = x->next;
    return x;
  }
  if (n >= REGION_CHUNK * REGION_CHUNKS) { *err = -EAGAIN; return NULL; }
  if ((c = chunks[n / REGION_CHUNK]) == NULL) {
    if (URSA__FAIL() || (c = calloc(REGION_CHUNK, sizeof *c)) == NULL) { *err = -ENOMEM; return NULL; }
    __atomic_store_n(&chunks[n / REGION_CHUNK], c, __ATOMIC_RELEASE);   /* pairs with rec_at */
  }
  x = &c[n % REGION_CHUNK];
  x->id = n + 1;
  __atomic_store_n(&nrecs, n + 1, __ATOMIC_RELEASE);                     /* pairs with rec_at */
  return x;
}

void ursa__regions_fini(void) {
  unsigned i;
  ursa__spin_lock(&regions_lock);
  __atomic_store_n(&nrecs, 0u, __ATOMIC_RELEASE);
  for (i = 0; i < REGION_CHUNKS && chunks[i] != NULL; i++) {
    free(chunks[i]);
    __atomic_store_n(&chunks[i], NULL, __ATOMIC_RELAXED);
  }
  regions = NULL;
  free_recs = NULL;
  ursa__spin_unlock(&regions_lock);
}

int ursa__region_name(ursa_region_t *r, uint32_t *id, uint32_t *gen) {
  struct ursa__region *x = region_get(r);
  if (x == NULL) return -EINVAL;
  *id = x->id;
  *gen = __atomic_load_n(&x->gen, __ATOMIC_RELAXED);
  return 0;
}

struct ursa__region *ursa__region_find(uint32_t id, uint32_t gen) { return rec_live(id, gen); }

struct ursa__vp *ursa__region_vp(const struct ursa__region *r) {
  return __atomic_load_n(&r->vp, __ATOMIC_ACQUIRE);    /* pairs with the release in apply */
}

struct ursa__region *ursa__region_of(ursa_region_t *r) { return region_get(r); }

void ursa__region_join(struct ursa__region *r) { __atomic_add_fetch(&r->nthreads, 1, __ATOMIC_RELAXED); }
void ursa__region_leave(struct ursa__region *r) { __atomic_sub_fetch(&r->nthreads, 1, __ATOMIC_RELEASE); }

static struct ursa__vp *vp_at(int i) { return ursa__g.nvps > 1 ? ursa__g.vps[i] : &ursa__g.vp0; }

int ursa_region_init(ursa_region_t *rp, int vp) {
  struct ursa__region_ref *ref = (struct ursa__region_ref *)rp;
  struct ursa__region *r;
  struct ursa__vp *self = ursa__tls_vp, *where;
  uint32_t gen;
  int err = 0;
  if (self == NULL) return ursa__novp();
  if (rp == NULL || vp < URSA_VP_ANY || vp >= (int)ursa__g.vps_api) return -EINVAL;
  {                                                    /* live: destroy it first */
    struct ursa__region_ref seen;
    memcpy(&seen, rp, sizeof seen);                    /* storage never initialized is normal */
#if URSA_VALGRIND
    VALGRIND_MAKE_MEM_DEFINED(&seen, sizeof seen);     /* here: memcheck, it is only compared */
#endif
    if (ref_live(&seen, rp) != NULL) return -EBUSY;
  }
  where = vp == URSA_VP_ANY ? ((self->mode == URSA__SMPMODE) ? ursa__smp_place(self, URSA_VP_ANY) : self) : vp_at(vp);
  do gen = __atomic_add_fetch(&gens, 1u, __ATOMIC_RELAXED); while (gen == 0);
  ursa__spin_lock(&regions_lock);
  if ((r = rec_alloc(&err)) == NULL) {
    ursa__spin_unlock(&regions_lock);
    return err;
  }
  r->nthreads = 0;
  r->want = NULL;
  __atomic_store_n(&r->vp, where, __ATOMIC_RELAXED);
  __atomic_store_n(&r->user, rp, __ATOMIC_RELAXED);
  __atomic_store_n(&r->gen, gen, __ATOMIC_RELEASE);    /* pairs with rec_live */
  r->next = regions;
  regions = r;
  ursa__spin_unlock(&regions_lock);
  memset(rp, 0, sizeof *rp);
  ref->id = r->id;
  ref->gen = gen;
  ref->magic = URSA__REGION_MAGIC;
  return 0;
}

int ursa_region_destroy(ursa_region_t *rp) {
  struct ursa__region *r, **pp;
  if (ursa__tls_vp == NULL) return ursa__novp();
  if ((r = region_get(rp)) == NULL) return -EINVAL;
  ursa__spin_lock(&regions_lock);
  if (region_get(rp) != r) {                           /* destroyed meanwhile by another thread */
    ursa__spin_unlock(&regions_lock);
    return -EINVAL;
  }
  if (__atomic_load_n(&r->nthreads, __ATOMIC_ACQUIRE) != 0) {
    ursa__spin_unlock(&regions_lock);
    return -EBUSY;
  }
  __atomic_store_n(&r->gen, 0u, __ATOMIC_RELEASE);     /* every reference to it is stale now */
  for (pp = &regions; *pp; pp = &(*pp)->next)
    if (*pp == r) { *pp = r->next; break; }
  r->next = free_recs;
  free_recs = r;
  ursa__spin_unlock(&regions_lock);
  ((struct ursa__region_ref *)rp)->magic = URSA__MAGIC_DEAD;
  return 0;
}

int ursa_region_vp(ursa_region_t *rp) {
  struct ursa__region *r = region_get(rp);
  if (r == NULL) return -EINVAL;
  return (int)ursa__region_vp(r)->index;
}

void ursa__regions_apply(struct ursa__vp *vp, const struct ursa__region *stays) {
  struct ursa__region *r;
  bool deferred = false;
  __atomic_store_n(&vp->x->moves, 0u, __ATOMIC_RELAXED);
  ursa__spin_lock(&regions_lock);
  for (r = regions; r; r = r->next) {
    struct ursa__vp *w = __atomic_load_n(&r->want, __ATOMIC_ACQUIRE);
    if (w == NULL || __atomic_load_n(&r->vp, __ATOMIC_RELAXED) != vp) continue;
    if (r == stays) { deferred = true; continue; }     /* a member still runs here */
    __atomic_store_n(&r->want, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&r->vp, w, __ATOMIC_RELEASE);     /* pairs with ursa__region_vp */
    ursa__vp_kick(w);                                  /* its members will arrive there */
  }
  ursa__spin_unlock(&regions_lock);
  if (deferred) __atomic_store_n(&vp->x->moves, 1u, __ATOMIC_RELAXED);   /* at the next switch */
}

int ursa_region_move(ursa_region_t *rp, int vp) {
  struct ursa__region *r = region_get(rp);
  struct ursa__vp *self = ursa__tls_vp, *owner;
  if (self == NULL) return ursa__novp();
  if (r == NULL || vp < 0 || vp >= (int)ursa__g.vps_api) return -EINVAL;
  if (!(self->mode == URSA__SMPMODE)) return 0;                            /* one VP: nowhere else to go */
  owner = ursa__region_vp(r);
  __atomic_store_n(&r->want, ursa__g.vps[vp], __ATOMIC_RELEASE);   /* pairs with apply's acquire */
  if (owner == self && self->cur->region != r) {
    ursa__regions_apply(self, NULL);                   /* no member runs here now: at once */
    return 0;
  }
  __atomic_store_n(&owner->x->moves, 1u, __ATOMIC_RELEASE);
  ursa__vp_kick(owner);
  return 0;
}

void ursa__regions_balance(struct ursa__vp *vp, const struct ursa__region *stays) {
  struct ursa__region *r, *give = NULL;
  struct ursa__vp *to = NULL;
  unsigned mine = 0, i;
  ursa__spin_lock(&regions_lock);
  for (r = regions; r; r = r->next)
    if (__atomic_load_n(&r->vp, __ATOMIC_RELAXED) == vp && __atomic_load_n(&r->nthreads, __ATOMIC_RELAXED) != 0) {
      mine++;
      if (r != stays && __atomic_load_n(&r->want, __ATOMIC_RELAXED) == NULL) give = r;
    }
  if (mine < 2 || give == NULL) goto out;
  for (i = 0; i < ursa__g.nvps && to == NULL; i++) {   /* an idle VP that hosts no region */
    struct ursa__vp *v = ursa__g.vps[i];
    if (v == vp || !__atomic_load_n(&v->x->in_idle, __ATOMIC_RELAXED)) continue;
    to = v;
    for (r = regions; r; r = r->next)
      if (__atomic_load_n(&r->vp, __ATOMIC_RELAXED) == v) { to = NULL; break; }
  }
  if (to == NULL) goto out;
  __atomic_store_n(&give->vp, to, __ATOMIC_RELEASE);  /* we own it and no member runs here:
                                                         pairs with ursa__region_vp */
  ursa__spin_unlock(&regions_lock);
  ursa__vp_kick(to);
  return;
out:
  ursa__spin_unlock(&regions_lock);
}
