/*
 * trace.c - the scheduler trace (issue #7, item 4).  With URSA_TRACE=<file> in the environment,
 * ursa_init starts recording, on every VP, the switches, wake-ups and waits in the kernel, and
 * ursa_fini writes them to <file> as one Chrome trace-event JSON file (chrome://tracing and
 * ui.perfetto.dev open it): one lane per VP, a slice per period a thread ran, wake-ups with a flow
 * arrow to the woken thread's next slice, migrations, idle periods.  docs/TRACE.md shows how to
 * read it; tools/trace_plot.py draws it.
 *
 * Protocol
 *   Recording.  Each VP appends 32-byte events to a buffer of its own (T.vps[vp->index]): a list
 *   of 64 KiB chunks that only that VP's kernel thread writes, so recording takes no lock and no
 *   atomic.  Timestamps are CLOCK_MONOTONIC nanoseconds (clock_gettime through the vDSO: about
 *   20 ns, the same clock on every CPU, the clock of ursa's timers), so events of different VPs
 *   merge by time.  An event names threads by id (never by pointer: a finished thread's descriptor
 *   is reused or unmapped before the file is written); a VP records a thread's name beside its
 *   first event about that thread (a small direct-mapped cache of ids says which names it has
 *   recorded).  The idle context of a VP (src/sched/vp.c) has id 0: ids start at 1.
 *   Per VP at most URSA_TRACE_EVENTS events (default 1,000,000) are kept; later ones are counted
 *   as dropped, and the file says where that VP's record ends.
 *
 *   The hooks (trace.h: URSA__TRACING()) cost, when URSA_TRACE is unset, one relaxed load of
 *   ursa__trace_flag.on and a predicted branch.  Switches: URSA__SWITCH_RETURN (the tail-called
 *   switch of yield, block, named yield and the SMP paths) hands the whole switch to
 *   ursa__switch_traced when tracing, and ursa__switch_prepare (finish, the SMP idle context)
 *   calls ursa__trace_switch; either way the untraced path keeps nothing live across a call.
 *   Wake-ups: ursa__wake (one VP, through ursa__wake_slow), the joiner hand-off of
 *   ursa__thread_finish, ursa__smp_wake and ursa__smp_timers_fire (several VPs).  Idle: around
 *   clock_nanosleep in next_ready (sched.c, one VP) and the futex wait of idle_sleep (vp.c).
 *   -DURSA_WITH_TRACE=OFF compiles them out.  Preemption: ursa__preempt_switch (src/model/model.c)
 *   calls ursa__trace_preempt at its safe point, on the VP's own kernel thread, before it switches.
 *
 *   Writing.  ursa_fini calls ursa__trace_fini once the kernel threads of VPs 1..N-1 are joined
 *   (their buffers are then quiet and visible to it), and the file is written from the merged,
 *   time-sorted events: a slice ends at the VP's next switch or kernel wait.  A program that never
 *   calls ursa_fini (exit, ursa_exit, a deadlock report) gets the file from an atexit handler,
 *   which clears the flag and then reads each VP's buffer as it is: VPs still running at that
 *   moment may be recording, so their last events may be missing (a data race the handler accepts
 *   knowingly; nothing is freed then).  An abort (stack overflow, panic) writes nothing.
 *
 * Who may call what
 *   ursa__trace_init, _fini, _discard: ursa_init / ursa_fini, on VP 0's kernel thread, while no
 *   other VP runs; _atfork_child: the fork handler, in the child.  ursa__trace_switch, _wake, _idle, _preempt: a VP's own kernel thread, for that
 *   VP, only while the flag is set.
 */
#define _GNU_SOURCE
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { EV_SWITCH = 1, EV_WAKE, EV_IDLE_BEGIN, EV_IDLE_END, EV_PREEMPT, EV_NAME };

struct tev {                      /* one event: 32 bytes */
  uint64_t ts;                    /* CLOCK_MONOTONIC ns                                         */
  uint64_t id;                    /* the thread switched to, woken, preempted, named (0: idle)  */
  uint64_t arg;                   /* SWITCH: the id switched from; WAKE: the VP it goes to      */
  uint32_t kind;
  int32_t  res;                   /* WAKE: the wake result (0, -ETIMEDOUT)                      */
};
union tslot {                     /* EV_NAME is followed by one slot holding the name */
  struct tev e;
  char       name[URSA_NAME_MAX];
};
_Static_assert(sizeof(union tslot) == 32, "a trace event is 32 bytes");

#define CHUNK_SLOTS  2047u        /* 64 KiB chunks with their header */
#define NAMED_CACHE  1024u        /* ids whose name a VP has recorded (direct-mapped) */
#define DEFAULT_MAX  1000000u     /* events kept per VP unless URSA_TRACE_EVENTS says otherwise */

struct tchunk {
  struct tchunk *next;
  uint32_t       n;               /* slots used */
  uint32_t       pad;
  union tslot    s[CHUNK_SLOTS];
};

struct tvp {                      /* one VP's buffer: written by that VP only */
  struct tchunk *head, *cur;
  uint64_t       used;            /* slots in every chunk */
  uint64_t       dropped;         /* events past the limit or past a failed allocation */
  uint64_t       named[NAMED_CACHE];
} __attribute__((aligned(64)));

static struct {
  struct tvp *vps;                /* NULL while not tracing */
  unsigned    nvps;
  FILE       *f;
  char       *path;
  uint64_t    t0;                 /* ursa_init's time: the trace's zero */
  uint64_t    max;                /* slots per VP */
  uint64_t    main_id;
  int         written;            /* by the atexit handler */
  int         forked;             /* the child of a fork: the file is the parent's, not written */
} T;

static int atexit_done;

/* The hooks' flag, alone in its page at offset 0xf00 (trace.h says why). */
_Alignas(4096) struct ursa__trace_flag ursa__trace_flag;

/* ---- recording (a VP's own kernel thread) ------------------------------------------------------ */

static URSA_NOINLINE union tslot *grow(struct tvp *b, unsigned n) {
  struct tchunk *c;
  if (b->used + n > T.max || URSA__FAIL() || (c = malloc(sizeof *c)) == NULL) {
    b->dropped++;
    return NULL;
  }
  c->next = NULL;
  c->n = 0;
  if (b->cur) b->cur->next = c; else b->head = c;
  b->cur = c;
  return &c->s[0];
}

/* n free consecutive slots in the current chunk (filled, then published by commit), or NULL. */
static inline union tslot *slots(struct tvp *b, unsigned n) {
  struct tchunk *c = b->cur;
  if (ursa_likely(c != NULL && c->n + n <= CHUNK_SLOTS && b->used + n <= T.max)) return &c->s[c->n];
  return grow(b, n);
}

static inline void commit(struct tvp *b, unsigned n) {
  b->cur->n += n;                 /* after the slots are filled: an atexit reader sees whole events */
  b->used += n;
}

static inline void record(struct tvp *b, uint32_t kind, uint64_t ts, uint64_t id, uint64_t arg, int32_t res) {
  union tslot *s = slots(b, 1);
  if (s == NULL) return;
  s->e.ts = ts;
  s->e.id = id;
  s->e.arg = arg;
  s->e.kind = kind;
  s->e.res = res;
  commit(b, 1);
}

/* Records t's name once per VP (again only when another id took its cache entry). */
static inline void name_once(struct tvp *b, uint64_t ts, const struct ursa__thread *t) {
  union tslot *s;
  uint64_t *c = &b->named[t->id % NAMED_CACHE];
  if (t->name[0] == '\0' || t->id == 0 || *c == t->id) return;   /* unnamed: "thread <id>" */
  if ((s = slots(b, 2)) == NULL) return;
  s[0].e.ts = ts;
  s[0].e.id = t->id;
  s[0].e.arg = 0;
  s[0].e.kind = EV_NAME;
  s[0].e.res = 0;
  memcpy(s[1].name, t->name, URSA_NAME_MAX);
  s[1].name[URSA_NAME_MAX - 1] = '\0';
  commit(b, 2);
  *c = t->id;
}

/* The recorders keep errno as they found it: the switch saves the running thread's errno after
 * them, and a wake-up happens in the middle of the waker's code. */
void ursa__trace_switch(struct ursa__vp *vp, const struct ursa__thread *from, const struct ursa__thread *to) {
  if (!URSA__RECORDING()) return;                     /* only exploration observes */
  struct tvp *b = &T.vps[vp->index];
  int e = errno;
  uint64_t ts = ursa__now();
  name_once(b, ts, to);
  record(b, EV_SWITCH, ts, to->id, from->id, 0);
  errno = e;
}


void ursa__trace_wake(struct ursa__vp *self, const struct ursa__thread *t, unsigned to_vp, int res) {
  if (!URSA__RECORDING()) return;                     /* only exploration observes */
  struct tvp *b = &T.vps[self->index];
  int e = errno;
  uint64_t ts = ursa__now();
  name_once(b, ts, t);
  record(b, EV_WAKE, ts, t->id, to_vp, res);
  errno = e;
}

void ursa__trace_idle(struct ursa__vp *vp, int begin) {
  if (!URSA__RECORDING()) return;                     /* only exploration observes */
  int e = errno;
  record(&T.vps[vp->index], begin ? EV_IDLE_BEGIN : EV_IDLE_END, ursa__now(), 0, 0, 0);
  errno = e;
}

void ursa__trace_preempt(struct ursa__vp *vp, const struct ursa__thread *t) {
  if (!URSA__RECORDING()) return;                     /* only exploration observes */
  struct tvp *b = &T.vps[vp->index];
  int e = errno;
  uint64_t ts = ursa__now();
  name_once(b, ts, t);
  record(b, EV_PREEMPT, ts, t->id, 0, 0);
  errno = e;
}

/* ---- start and stop (VP 0, no other VP running) ------------------------------------------------- */

static void free_buffers(void) {
  unsigned i;
  for (i = 0; T.vps && i < T.nvps; i++) {
    struct tchunk *c = T.vps[i].head;
    while (c) {
      struct tchunk *n = c->next;
      free(c);
      c = n;
    }
  }
  free(T.vps);
  T.vps = NULL;
  free(T.path);
  T.path = NULL;
}

static void write_trace(uint64_t t_end);

static void trace_atexit(void) {
  if (T.vps == NULL || T.written || T.forked) return;
  /* Other VPs may still run: stop the hooks, then read each buffer as it is (file comment). */
  __atomic_and_fetch(&ursa__trace_flag.on, ~URSA__TRACE_RECORD, __ATOMIC_RELAXED);
  write_trace(ursa__now());
  T.written = 1;                                      /* buffers left allocated (and reachable):
                                                         a VP may still be writing */
}

static uint64_t env_events(void) {
  return ursa__env_number("URSA_TRACE_EVENTS", 16, (uint64_t)1 << 40, DEFAULT_MAX);
}

void ursa__trace_init(void) {
  const char *p = getenv("URSA_TRACE");
  struct ursa__thread *m = ursa__g.vp0.main_thread;
  __atomic_and_fetch(&ursa__trace_flag.on, ~URSA__TRACE_RECORD, __ATOMIC_RELAXED);
  if (p == NULL || *p == '\0') return;
#ifdef URSA_NO_TRACE
  fprintf(stderr, "ursa: URSA_TRACE=%s: the trace is not compiled in (-DURSA_WITH_TRACE=OFF); tracing off\n", p);
  return;
#endif
  memset(&T, 0, sizeof T);
  if ((T.f = fopen(p, "w")) == NULL) {
    fprintf(stderr, "ursa: URSA_TRACE=%s: %s; tracing off\n", p, strerror(errno));
    return;
  }
  T.nvps = ursa__g.nvps ? ursa__g.nvps : 1;
  if (URSA__FAIL() || (T.path = strdup(p)) == NULL || URSA__FAIL() ||
      (T.vps = aligned_alloc(64, T.nvps * sizeof *T.vps)) == NULL) {
    fprintf(stderr, "ursa: URSA_TRACE=%s: %s; tracing off\n", p, strerror(ENOMEM));
    fclose(T.f);
    remove(p);
    free(T.path);
    memset(&T, 0, sizeof T);
    return;
  }
  memset(T.vps, 0, T.nvps * sizeof *T.vps);
  T.max = env_events();
  T.t0 = ursa__now();
  T.main_id = m ? m->id : 1;
  if (m) name_once(&T.vps[0], T.t0, m);              /* main runs on VP 0 from now on */
  if (!atexit_done) {
    atexit(trace_atexit);
    atexit_done = 1;
  }
  __atomic_or_fetch(&ursa__trace_flag.on, URSA__TRACE_RECORD, __ATOMIC_RELAXED);   /* VPs 1..N-1 start later */
}

void ursa__trace_discard(void) {
  if (T.vps == NULL) return;
  __atomic_and_fetch(&ursa__trace_flag.on, ~URSA__TRACE_RECORD, __ATOMIC_RELAXED);
  fclose(T.f);
  remove(T.path);
  free_buffers();
}

void ursa__trace_fini(void) {
  if (T.vps == NULL) return;
  __atomic_and_fetch(&ursa__trace_flag.on, ~URSA__TRACE_RECORD, __ATOMIC_RELAXED);
  if (T.forked) fclose(T.f);                          /* (nothing was written to it yet) */
  else write_trace(ursa__now());
  free_buffers();
}

/* In the child of a fork (src/runtime/): the trace and its file are the parent's; the child
 * records nothing more and writes nothing. */
void ursa__trace_atfork_child(void) {
  if (T.vps == NULL) return;
  __atomic_and_fetch(&ursa__trace_flag.on, ~URSA__TRACE_RECORD, __ATOMIC_RELAXED);
  T.forked = 1;
}

/* ---- writing ----------------------------------------------------------------------------------- */

struct rec {                      /* an event with its VP, for the merge */
  uint64_t ts, id, arg;
  uint32_t kind, vp, seq;
  int32_t  res;
};

struct info {                     /* what the writer knows about one thread id */
  uint64_t id;                    /* 0: free entry */
  uint64_t wake_ts, flow;
  int      last_vp, wake_vp;
  int      pending;               /* woken, not yet run: its next slice gets the flow arrow */
  char     name[URSA_NAME_MAX];
};

struct map { struct info *e; size_t cap, n; };

static struct info *map_get(struct map *m, uint64_t id) {
  size_t i;
  if ((m->n + 1) * 2 > m->cap) {                        /* keep it at most half full */
    size_t cap = m->cap ? m->cap * 2 : 1024, k;
    struct info *e = calloc(cap, sizeof *e);
    if (e == NULL) return NULL;
    for (k = 0; k < m->cap; k++) {
      if (m->e[k].id == 0) continue;
      for (i = (size_t)(m->e[k].id * 0x9e3779b97f4a7c15ull) & (cap - 1); e[i].id; i = (i + 1) & (cap - 1)) {}
      e[i] = m->e[k];
    }
    free(m->e);
    m->e = e;
    m->cap = cap;
  }
  for (i = (size_t)(id * 0x9e3779b97f4a7c15ull) & (m->cap - 1); m->e[i].id; i = (i + 1) & (m->cap - 1))
    if (m->e[i].id == id) return &m->e[i];
  m->e[i].id = id;
  m->e[i].last_vp = -1;
  m->n++;
  return &m->e[i];
}

static struct info *map_find(const struct map *m, uint64_t id) {
  size_t i;
  if (m->cap == 0) return NULL;
  for (i = (size_t)(id * 0x9e3779b97f4a7c15ull) & (m->cap - 1); m->e[i].id; i = (i + 1) & (m->cap - 1))
    if (m->e[i].id == id) return &m->e[i];
  return NULL;
}

static int rec_cmp(const void *a, const void *b) {
  const struct rec *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  if (x->vp != y->vp) return x->vp < y->vp ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Writes s as a JSON string body: quotes, backslashes and control bytes escaped, bytes that are
 * not valid UTF-8 (a name cut inside a character) replaced by '?'. */
static void put_str(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned char c = *p;
    size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    size_t k;
    for (k = 1; k < len; k++)
      if ((p[k] & 0xc0) != 0x80) { len = 0; break; }
    if (len == 0) { fputc('?', f); p++; continue; }
    if (len > 1) { fwrite(p, 1, len, f); p += len; continue; }
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
    p++;
  }
}

struct writer {
  FILE       *f;
  uint64_t    t0;
  struct map  ids;
  int         first;
};

/* The trace's time of ts in microseconds with three decimals (exact: integer arithmetic). */
static void put_ts(struct writer *w, const char *key, uint64_t ts) {
  uint64_t r = ts > w->t0 ? ts - w->t0 : 0;
  fprintf(w->f, "\"%s\":%llu.%03llu", key, (unsigned long long)(r / 1000), (unsigned long long)(r % 1000));
}

static void ev_open(struct writer *w, const char *ph, unsigned vp) {
  fprintf(w->f, "%s\n{\"ph\":\"%s\",\"pid\":1,\"tid\":%u,", w->first ? "" : ",", ph, vp);
  w->first = 0;
}

static const char *thread_name(struct writer *w, uint64_t id, char *buf, size_t size) {
  const struct info *in = map_find(&w->ids, id);      /* (no insertion: callers hold entries) */
  if (id == 0) return "polling";
  if (in && in->name[0]) return in->name;
  snprintf(buf, size, "thread %llu", (unsigned long long)id);
  return buf;
}

enum { L_NONE = 0, L_RUN, L_IDLE };

struct lane {                     /* one VP's lane while the writer walks the events */
  int      open;                  /* L_RUN: `cur` runs (0: the idle context); L_IDLE: asleep */
  uint64_t start;
  uint64_t cur;                   /* the thread the VP runs */
  uint64_t last_ts;
  int      flow;                  /* the open slice is a woken thread's first: draw the arrow */
  uint64_t flow_id, flow_ts;
  int      flow_vp;
};

static void lane_close(struct writer *w, unsigned vp, struct lane *l, uint64_t ts) {
  char buf[48];
  uint64_t dur;
  if (l->open == L_NONE) return;
  dur = ts > l->start ? ts - l->start : 0;
  ev_open(w, "X", vp);
  put_ts(w, "ts", l->start);
  fprintf(w->f, ",\"dur\":%llu.%03llu,", (unsigned long long)(dur / 1000), (unsigned long long)(dur % 1000));
  if (l->open == L_IDLE) {
    fprintf(w->f, "\"name\":\"idle\",\"cat\":\"idle\",\"args\":{\"what\":\"asleep in the kernel, nothing to run\"}}");
  } else if (l->cur == 0) {
    fprintf(w->f, "\"name\":\"polling\",\"cat\":\"sched\",\"args\":{\"what\":\"the VP's idle context: looks "
                  "for work, polls, then sleeps\"}}");
  } else {
    fprintf(w->f, "\"name\":\"");
    put_str(w->f, thread_name(w, l->cur, buf, sizeof buf));
    fprintf(w->f, "\",\"cat\":\"run\",\"args\":{\"id\":%llu}}", (unsigned long long)l->cur);
  }
  if (l->flow) {                  /* waker's slice -> this slice (bound at its middle) */
    ev_open(w, "s", (unsigned)l->flow_vp);
    put_ts(w, "ts", l->flow_ts);
    fprintf(w->f, ",\"id\":%llu,\"name\":\"wake\",\"cat\":\"wake\"}", (unsigned long long)l->flow_id);
    ev_open(w, "f", vp);
    put_ts(w, "ts", l->start + dur / 2);
    fprintf(w->f, ",\"bp\":\"e\",\"id\":%llu,\"name\":\"wake\",\"cat\":\"wake\"}", (unsigned long long)l->flow_id);
    l->flow = 0;
  }
  l->open = L_NONE;
}

static void instant(struct writer *w, unsigned vp, uint64_t ts, const char *what, const char *cat, uint64_t id) {
  char buf[48];
  ev_open(w, "i", vp);
  fprintf(w->f, "\"s\":\"t\",");
  put_ts(w, "ts", ts);
  fprintf(w->f, ",\"name\":\"%s ", what);
  put_str(w->f, thread_name(w, id, buf, sizeof buf));
  fprintf(w->f, "\",\"cat\":\"%s\",\"args\":{\"id\":%llu", cat, (unsigned long long)id);
}

static void write_trace(uint64_t t_end) {
  struct writer w;
  struct rec *r = NULL;
  struct lane *lanes = NULL;
  size_t n = 0, cap = 0, i;
  uint64_t flows = 0, dropped = 0;
  unsigned v;
  FILE *f = T.f;
  int err = 0;
  memset(&w, 0, sizeof w);
  w.f = f;
  w.t0 = T.t0;
  w.first = 1;
  for (v = 0; v < T.nvps; v++) {
    struct tvp *b = &T.vps[v];
    cap += b->used;
    dropped += b->dropped;
  }
  if ((r = malloc((cap + 1) * sizeof *r)) == NULL || (lanes = calloc(T.nvps, sizeof *lanes)) == NULL) goto nomem;
  /* merge every VP's events; names go to the id map */
  for (v = 0; v < T.nvps; v++) {
    struct tchunk *c;
    uint32_t seq = 0;
    for (c = T.vps[v].head; c; c = c->next) {
      uint32_t k, cn = c->n;
      for (k = 0; k < cn && n < cap; k++) {
        const struct tev *e = &c->s[k].e;
        if (e->kind == EV_NAME) {
          struct info *in;
          if (k + 1 >= cn) break;
          if ((in = map_get(&w.ids, e->id)) == NULL) goto nomem;
          memcpy(in->name, c->s[k + 1].name, URSA_NAME_MAX);
          in->name[URSA_NAME_MAX - 1] = '\0';
          k++;
          continue;
        }
        if (e->kind < EV_SWITCH || e->kind > EV_PREEMPT) continue;   /* (atexit: a torn event) */
        r[n].ts = e->ts;
        r[n].id = e->id;
        r[n].arg = e->arg;
        r[n].kind = e->kind;
        r[n].res = e->res;
        r[n].vp = v;
        r[n].seq = seq++;
        if (e->ts > lanes[v].last_ts) lanes[v].last_ts = e->ts;
        n++;
      }
    }
  }
  qsort(r, n, sizeof *r, rec_cmp);
  if (n && r[n - 1].ts > t_end) t_end = r[n - 1].ts;

  setvbuf(f, NULL, _IOFBF, 1 << 20);
  /* displayTimeUnit first: Perfetto reads it only before the events */
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"ursa URSA_TRACE\",\"vps\":%u,"
             "\"clock\":\"CLOCK_MONOTONIC\",\"t0_ns\":%llu,\"events\":%llu,\"dropped_events\":%llu},\n"
             "\"traceEvents\":[",
          T.nvps, (unsigned long long)T.t0, (unsigned long long)n, (unsigned long long)dropped);
  ev_open(&w, "M", 0);
  fprintf(f, "\"name\":\"process_name\",\"args\":{\"name\":\"ursa: ");
  put_str(f, program_invocation_short_name);
  fprintf(f, "\"}}");
  for (v = 0; v < T.nvps; v++) {
    ev_open(&w, "M", v);
    fprintf(f, "\"name\":\"thread_name\",\"args\":{\"name\":\"VP %u\"}}", v);
    ev_open(&w, "M", v);
    fprintf(f, "\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%u}}", v);
    lanes[v].open = L_RUN;                 /* VP 0 runs main, the others their idle context */
    lanes[v].start = T.t0;
    lanes[v].cur = v == 0 ? T.main_id : 0;
  }
  {
    struct info *m = map_get(&w.ids, T.main_id);
    if (m == NULL) goto nomem;
    m->last_vp = 0;
  }

  for (i = 0; i < n; i++) {
    const struct rec *e = &r[i];
    struct lane *l = &lanes[e->vp];
    struct info *in = e->id ? map_get(&w.ids, e->id) : NULL;
    if (e->id && in == NULL) goto nomem;
    switch (e->kind) {
    case EV_SWITCH:
      lane_close(&w, e->vp, l, e->ts);
      l->open = L_RUN;
      l->start = e->ts;
      l->cur = e->id;
      if (in == NULL) break;                                     /* the idle context */
      if (in->last_vp >= 0 && (unsigned)in->last_vp != e->vp) {
        instant(&w, e->vp, e->ts, "migrate", "migrate", e->id);
        fprintf(f, ",\"from_vp\":%d,\"to_vp\":%u}}", in->last_vp, e->vp);
      }
      in->last_vp = (int)e->vp;
      if (in->pending) {
        l->flow = 1;
        l->flow_id = in->flow;
        l->flow_ts = in->wake_ts;
        l->flow_vp = in->wake_vp;
        in->pending = 0;
      }
      break;
    case EV_WAKE:
      instant(&w, e->vp, e->ts, "wake", "wake", e->id);
      fprintf(f, ",\"to_vp\":%llu%s}}", (unsigned long long)e->arg, e->res ? ",\"timeout\":true" : "");
      if (in == NULL) break;
      in->pending = 1;
      in->flow = ++flows;
      in->wake_ts = e->ts;
      in->wake_vp = (int)e->vp;
      break;
    case EV_IDLE_BEGIN:
      lane_close(&w, e->vp, l, e->ts);
      l->open = L_IDLE;
      l->start = e->ts;
      break;
    case EV_IDLE_END:
      lane_close(&w, e->vp, l, e->ts);
      l->open = L_RUN;                                           /* back to what it ran */
      l->start = e->ts;
      break;
    case EV_PREEMPT:
      instant(&w, e->vp, e->ts, "preempt", "preempt", e->id);
      fprintf(f, "}}");
      break;
    default:
      break;
    }
  }
  for (v = 0; v < T.nvps; v++) {
    uint64_t end = T.vps[v].dropped ? lanes[v].last_ts : t_end;
    lane_close(&w, v, &lanes[v], end);
    if (T.vps[v].dropped) {
      ev_open(&w, "i", v);
      fprintf(f, "\"s\":\"t\",");
      put_ts(&w, "ts", end);
      fprintf(f, ",\"name\":\"trace full: %llu events dropped\",\"cat\":\"trace\",\"args\":{}}",
              (unsigned long long)T.vps[v].dropped);
      fprintf(stderr, "ursa: URSA_TRACE=%s: VP %u dropped %llu events past URSA_TRACE_EVENTS=%llu\n",
              T.path, v, (unsigned long long)T.vps[v].dropped, (unsigned long long)T.max);
    }
  }
  fprintf(f, "\n]}\n");
  goto out;
nomem:
  fprintf(stderr, "ursa: URSA_TRACE=%s: %s; trace not written\n", T.path, strerror(ENOMEM));
out:
  if (ferror(f)) err = errno ? errno : EIO;
  if (fclose(f) != 0 && err == 0) err = errno;
  if (err) fprintf(stderr, "ursa: URSA_TRACE=%s: %s; trace incomplete\n", T.path, strerror(err));
  T.f = NULL;
  free(r);
  free(lanes);
  free(w.ids.e);
}
