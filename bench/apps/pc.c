/*
 * pc.c - PC, producers and consumers xPyCzS (Ishihara et al.: x producers, y consumers, a buffer
 * of z slots; Keen et al. 4.1, 4.2 and section 6 on named yield).
 *
 * Each producer makes --items items; the consumers share them out evenly (x * items must divide
 * by y).  The papers' PC work is real computation, not a busy loop: producing item `id` computes
 * its value, --work rounds of splitmix64's mixing function from the id (with ursa_tick() at the
 * loop's back-edge); consuming it computes the same value again and compares it (every item is
 * checked), then adds it to the checksum.
 *
 * Styles:
 *   cp          SR's bounded buffer (the SR book, the papers' CP version): semaphores empty (z),
 *               full (0), and mutexD / mutexF around the producers' rear and the consumers' front.
 *   cm          shared variables (count, front, rear) and URSA_WAITFOR: a producer awaits
 *               count < z, a consumer count > 0, yielding unnamed (ursa_yield) while they wait.
 *   cm --yield named
 *               the same, but a waiting producer yields to a consumer and a waiting consumer to a
 *               producer, round robin (ursa_yield_to: the papers' named yield).
 *   pcm         all producers in one ursa region (VP 0), all consumers in another (VP 1 mod VPs),
 *               as Ishihara et al. placed them: empty and full are semaphores between the regions;
 *               rear is shared by the producers' region only and front by the consumers', so
 *               neither needs a lock (pure PCM: no protection synchronization).
 * cm and pcm call ursa_require_cooperative.
 *
 * Checked: every item id was consumed exactly once, every value arrived intact, and the counts
 * add up.  checksum: the sum of the values, the same for every style and model.
 */
#include "apps_common.h"

#define MAXT 1024

static uint64_t nprod = 1, ncons = 1, slots = 1, items = 1000, work = 1000;
static const char *style = "cp", *yield_kind = "unnamed";

static uint64_t *buf_id, *buf_val;     /* the z slots */
static uint64_t *seen;                 /* per item id: times consumed */
static uint64_t corrupt, consumed_total;
static uint64_t checksum_of[MAXT];

/* produce / consume: the real computation.  One copy, out of line, that both sides call, so that
 * the two halves of the pipeline run the same instructions at the same addresses.  Inlined into
 * the producer and into consume, the loop's two copies can run at different speeds: in a copy of
 * this program with a timeline of each item (one VP, cp-ts, --work 10^6) the producer's took
 * 3.88-3.96 ms per item and the consumer's 3.60-3.70, which would bind the pipeline at 2 VPs to
 * its slower half (~1.86x its one-VP time instead of 48/25 = 1.92x).  In this program's own build
 * the 2-VP/1-VP ratios did not move measurably (5 interleaved rounds each: cp-ic 1.82 -> 1.85,
 * cp-ts 1.83 -> 1.83, native 1.84 -> 1.83); the copy is one so that a layout cannot split it. */
static __attribute__((noinline)) uint64_t compute(uint64_t id) {
  uint64_t i, x = id;
  for (i = 0; i < work; i++) {
    x = apps_mix64(x + 0x9e3779b97f4a7c15ull);
    ursa_tick();
  }
  return x;
}

static inline void consume(unsigned c, uint64_t id, uint64_t val) {
  if (id >= nprod * items || compute(id) != val) __atomic_add_fetch(&corrupt, 1, __ATOMIC_RELAXED);
  else __atomic_add_fetch(&seen[id], 1, __ATOMIC_RELAXED);
  checksum_of[c] += val;
}

/* ---- cp: SR's bounded buffer ------------------------------------------------------------------- */

static ursa_sem_t empty, full, mutexD, mutexF;
static uint64_t rear, front;

static void *producer_cp(void *arg) {
  uint64_t p = (uintptr_t)arg, k;
  for (k = 0; k < items; k++) {
    uint64_t id = p * items + k, v = compute(id);
    APPS_CHECK(ursa_sem_wait(&empty));
    APPS_CHECK(ursa_sem_wait(&mutexD));
    buf_id[rear] = id;
    buf_val[rear] = v;
    rear = (rear + 1) % slots;
    APPS_CHECK(ursa_sem_post(&mutexD));
    APPS_CHECK(ursa_sem_post(&full));
  }
  return NULL;
}

static void *consumer_cp(void *arg) {
  unsigned c = (unsigned)(uintptr_t)arg;
  uint64_t k, n = nprod * items / ncons;
  for (k = 0; k < n; k++) {
    uint64_t id, v;
    APPS_CHECK(ursa_sem_wait(&full));
    APPS_CHECK(ursa_sem_wait(&mutexF));
    id = buf_id[front];
    v = buf_val[front];
    front = (front + 1) % slots;
    APPS_CHECK(ursa_sem_post(&mutexF));
    APPS_CHECK(ursa_sem_post(&empty));
    consume(c, id, v);
  }
  return NULL;
}

#ifndef APPS_PTHREADS
/* ---- cm: shared variables and waitfor, unnamed or named yield ------------------------------------ */

/* External linkage: re-read after every ursa call. */
uint64_t pc_count, pc_rear, pc_front;
static int named;
static ursa_thread_t prod_th[MAXT], cons_th[MAXT];
static int prod_done[MAXT], cons_done[MAXT];
static unsigned next_cons, next_prod;

/* Yield to the next unfinished thread of the other side (named), or to whoever is next. */
static void yield_other(ursa_thread_t *th, int *done, uint64_t n, unsigned *next) {
  uint64_t tries;
  if (named) {
    for (tries = 0; tries < n; tries++) {
      unsigned j = (*next)++ % (unsigned)n;
      if (!done[j]) {
        int e = ursa_yield_to(th[j]);
        if (e != -ESRCH) APPS_CHECK(e);
        return;
      }
    }
  }
  APPS_CHECK(ursa_yield());
}

static void *producer_cm(void *arg) {
  uint64_t p = (uintptr_t)arg, k;
  for (k = 0; k < items; k++) {
    uint64_t id = p * items + k, v = compute(id);
    while (!(pc_count < slots)) yield_other(cons_th, cons_done, ncons, &next_cons);   /* waitfor */
    buf_id[pc_rear] = id;
    buf_val[pc_rear] = v;
    pc_rear = (pc_rear + 1) % slots;
    pc_count++;
  }
  prod_done[p] = 1;
  return NULL;
}

static void *consumer_cm(void *arg) {
  unsigned c = (unsigned)(uintptr_t)arg;
  uint64_t k, n = nprod * items / ncons;
  for (k = 0; k < n; k++) {
    uint64_t id, v;
    while (!(pc_count > 0)) yield_other(prod_th, prod_done, nprod, &next_prod);       /* waitfor */
    id = buf_id[pc_front];
    v = buf_val[pc_front];
    pc_front = (pc_front + 1) % slots;
    pc_count--;
    consume(c, id, v);
  }
  cons_done[c] = 1;
  return NULL;
}

/* ---- pcm: producers' region, consumers' region, semaphores between --------------------------------- */

static ursa_region_t preg, creg;

static void *producer_pcm(void *arg) {
  uint64_t p = (uintptr_t)arg, k;
  for (k = 0; k < items; k++) {
    uint64_t id = p * items + k, v = compute(id);
    APPS_CHECK(ursa_sem_wait(&empty));
    buf_id[pc_rear] = id;          /* no ursa call until rear moves: atomic within the region */
    buf_val[pc_rear] = v;
    pc_rear = (pc_rear + 1) % slots;
    APPS_CHECK(ursa_sem_post(&full));
  }
  return NULL;
}

static void *consumer_pcm(void *arg) {
  unsigned c = (unsigned)(uintptr_t)arg;
  uint64_t k, n = nprod * items / ncons;
  for (k = 0; k < n; k++) {
    uint64_t id, v;
    APPS_CHECK(ursa_sem_wait(&full));
    id = buf_id[pc_front];
    v = buf_val[pc_front];
    pc_front = (pc_front + 1) % slots;
    APPS_CHECK(ursa_sem_post(&empty));
    consume(c, id, v);
  }
  return NULL;
}
#endif /* !APPS_PTHREADS */

int main(int argc, char **argv) {
  static ursa_thread_t pth[MAXT], cth[MAXT];
  struct apps_opt opts[] = {
    { "style", APPS_STR, &style, "cp | cm | pcm" },
    { "yield", APPS_STR, &yield_kind, "cm only: unnamed | named" },
    { "work", APPS_U64, &work, "rounds of computation to produce (and to check) an item" },
    { "items", APPS_U64, &items, "items per producer" },
    { "producers", APPS_U64, &nprod, "x" },
    { "consumers", APPS_U64, &ncons, "y" },
    { "slots", APPS_U64, &slots, "z" },
    { NULL, 0, NULL, NULL } };
  struct apps_run run;
  char tag[32];
  uint64_t i, total, missing = 0, dup = 0, checksum = 0;
  int ok;
  apps_parse(argc, argv, opts, "PC, producers/consumers xPyCzS (Ishihara et al.; Keen et al. 4.1, 4.2, 6)");
  if (!apps_one_of(style, "cp cm pcm") || !apps_one_of(yield_kind, "unnamed named") ||
      (strcmp(yield_kind, "named") == 0 && strcmp(style, "cm") != 0)) {
    fprintf(stderr, "pc: --style cp|cm|pcm, --yield unnamed|named (named with cm only)\n");
    return 2;
  }
  if (nprod < 1 || ncons < 1 || nprod > MAXT || ncons > MAXT || slots < 1 || items < 1 ||
      (nprod * items) % ncons != 0) {
    fprintf(stderr, "pc: need 1..%d producers and consumers, slots >= 1, items >= 1, and "
                    "producers * items divisible by consumers\n", MAXT);
    return 2;
  }
  total = nprod * items;
  snprintf(tag, sizeof tag, "%s%s", style, strcmp(yield_kind, "named") == 0 ? ".named" : "");
  apps_begin(&run, "pc", tag, strcmp(style, "cp") == 0 ? APPS_CP : strcmp(style, "cm") == 0 ? APPS_CM : APPS_PCM);
  buf_id = calloc(slots, sizeof *buf_id);
  buf_val = calloc(slots, sizeof *buf_val);
  seen = calloc(total, sizeof *seen);
  if (!buf_id || !buf_val || !seen) apps_die("out of memory", ENOMEM);
  APPS_CHECK(ursa_sem_init(&empty, (unsigned)slots));
  APPS_CHECK(ursa_sem_init(&full, 0));
  APPS_CHECK(ursa_sem_init(&mutexD, 1));
  APPS_CHECK(ursa_sem_init(&mutexF, 1));
#ifndef APPS_PTHREADS
  named = strcmp(yield_kind, "named") == 0;
  if (strcmp(style, "pcm") == 0) {
    APPS_CHECK(ursa_region_init(&preg, 0));
    APPS_CHECK(ursa_region_init(&creg, (int)(1 % run.vps)));
  }
#endif

  apps_clock_start(&run);
  for (i = 0; i < nprod; i++) {
    void *arg = (void *)(uintptr_t)i;
    if (strcmp(style, "cp") == 0) apps_spawn(&pth[i], producer_cp, arg);
#ifndef APPS_PTHREADS
    else if (strcmp(style, "cm") == 0) apps_spawn(&pth[i], producer_cm, arg);
    else apps_create_in(&pth[i], &preg, 0, producer_pcm, arg);
    prod_th[i] = pth[i];
#endif
  }
  for (i = 0; i < ncons; i++) {
    void *arg = (void *)(uintptr_t)i;
    if (strcmp(style, "cp") == 0) apps_spawn(&cth[i], consumer_cp, arg);
#ifndef APPS_PTHREADS
    else if (strcmp(style, "cm") == 0) apps_spawn(&cth[i], consumer_cm, arg);
    else apps_create_in(&cth[i], &creg, 0, consumer_pcm, arg);
    cons_th[i] = cth[i];
#endif
  }
  for (i = 0; i < nprod; i++) APPS_CHECK(ursa_join(pth[i], NULL));   /* producers first: named */
  for (i = 0; i < ncons; i++) APPS_CHECK(ursa_join(cth[i], NULL));   /* yields never name a joined one */
  apps_clock_stop(&run);

  for (i = 0; i < total; i++) {
    if (seen[i] == 0) missing++;
    else if (seen[i] > 1) dup += seen[i] - 1;
    consumed_total += seen[i];
  }
  for (i = 0; i < ncons; i++) checksum += checksum_of[i];
  apps_result(&run, "work=%llu items=%llu config=%lluP%lluC%lluS yield=%s",
              (unsigned long long)work, (unsigned long long)items, (unsigned long long)nprod,
              (unsigned long long)ncons, (unsigned long long)slots, yield_kind);
  ok = missing == 0 && dup == 0 && corrupt == 0 && consumed_total == total;
  apps_answer(&run, ok, "produced=%llu consumed=%llu missing=%llu duplicated=%llu corrupt=%llu checksum=%016llx",
              (unsigned long long)total, (unsigned long long)consumed_total, (unsigned long long)missing,
              (unsigned long long)dup, (unsigned long long)corrupt, (unsigned long long)checksum);
#ifndef APPS_PTHREADS
  if (strcmp(style, "pcm") == 0) {
    APPS_CHECK(ursa_region_destroy(&preg));
    APPS_CHECK(ursa_region_destroy(&creg));
  }
#endif
  free(buf_id); free(buf_val); free(seen);
  return apps_end(&run, ok);
}
