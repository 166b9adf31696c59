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
 * Regions are few: they are kept in one list under regions_lock, walked only when a move is due.
 *
 * Automatic balancing (URSA_REGION_BALANCE=1): at a switch, a VP that hosts two or more regions
 * with threads, while another VP is idle and hosts none, hands that VP one whole region (not the
 * region of a thread that goes on running here).  It is the region's owner and none of its
 * members runs, so it moves the binding itself, as ursa__regions_apply does.
 */
#define _GNU_SOURCE
#include "sched_smp.h"

#include <string.h>

#define URSA__REGION_MAGIC 0x52474e31u

struct ursa__region {
  uint32_t             magic;
  uint32_t             nthreads;      /* atomic: members not yet finished                  */
  struct ursa__vp     *vp;            /* atomic: the VP the region runs on                 */
  struct ursa__vp     *want;          /* atomic: where ursa_region_move asked it to go     */
  struct ursa__region *next;          /* the registry, under regions_lock                  */
};
URSA__STATIC_ASSERT_FITS(struct ursa__region, ursa_region_t);

static ursa__spin_t regions_lock;
static struct ursa__region *regions;

static struct ursa__region *region_get(ursa_region_t *r) {
  struct ursa__region *x = (struct ursa__region *)r;
  return (x && x->magic == URSA__REGION_MAGIC) ? x : NULL;
}

struct ursa__vp *ursa__region_vp(const struct ursa__region *r) {
  return __atomic_load_n(&r->vp, __ATOMIC_ACQUIRE);    /* pairs with the release in apply */
}

struct ursa__region *ursa__region_of(ursa_region_t *r) { return region_get(r); }

void ursa__region_join(struct ursa__region *r) { __atomic_add_fetch(&r->nthreads, 1, __ATOMIC_RELAXED); }
void ursa__region_leave(struct ursa__region *r) { __atomic_sub_fetch(&r->nthreads, 1, __ATOMIC_RELEASE); }

static struct ursa__vp *vp_at(int i) { return ursa__g.nvps > 1 ? ursa__g.vps[i] : &ursa__g.vp0; }

int ursa_region_init(ursa_region_t *rp, int vp) {
  struct ursa__region *r = (struct ursa__region *)rp;
  struct ursa__vp *self = ursa__tls_vp;
  if (self == NULL) return -EPERM;
  if (r == NULL || vp < URSA_VP_ANY || vp >= (int)ursa__g.nvps) return -EINVAL;
  memset(r, 0, sizeof *r);
  r->vp = vp == URSA_VP_ANY ? ((self->mode == URSA__SMPMODE) ? ursa__smp_place(self, URSA_VP_ANY) : self) : vp_at(vp);
  r->magic = URSA__REGION_MAGIC;
  ursa__spin_lock(&regions_lock);
  r->next = regions;
  regions = r;
  ursa__spin_unlock(&regions_lock);
  return 0;
}

int ursa_region_destroy(ursa_region_t *rp) {
  struct ursa__region *r = region_get(rp), **pp;
  if (ursa__tls_vp == NULL) return -EPERM;
  if (r == NULL) return -EINVAL;
  if (__atomic_load_n(&r->nthreads, __ATOMIC_ACQUIRE) != 0) return -EBUSY;
  ursa__spin_lock(&regions_lock);
  for (pp = &regions; *pp; pp = &(*pp)->next)
    if (*pp == r) { *pp = r->next; break; }
  ursa__spin_unlock(&regions_lock);
  r->magic = URSA__MAGIC_DEAD;
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
  if (self == NULL) return -EPERM;
  if (r == NULL || vp < 0 || vp >= (int)ursa__g.nvps) return -EINVAL;
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
