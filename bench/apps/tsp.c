/*
 * tsp.c - TSP, the travelling salesman by branch and bound with a shared bound (Keen et al.
 * section 6; Ishihara et al. 3.1: "computationally intensive with little synchronization").
 *
 * The instance: --cities points (8 .. 22) with coordinates from a fixed generator (splitmix64,
 * seed 2001, x and y in [0, 1000)), distances the Euclidean ones rounded to integers.  Their
 * optimal tour lengths are known (the table below, computed by Held-Karp dynamic programming,
 * twice, independently in Python and in C, and by brute force up to 10 cities).
 *
 * The search: tours start at city 0; the bag of tasks holds every prefix 0, a, b (in order of
 * d(0,a) + d(a,b)); --procs workers take tasks from the bag and search each depth-first, pruning
 * a partial tour when its length plus a lower bound on the rest (the shortest edge out of the
 * current city and out of every unvisited one) reaches the best tour found so far, which all
 * workers share.  The nearest-neighbour tour gives the first bound.  ursa_tick() at the back-edge
 * of the loop over the next city.
 *   cp   a semaphore around the bag's index and another around the bound's update (read without
 *        it, atomically); the tour is stored under it.
 *   cm   the same shared variables without semaphores.
 * Checked: the length found is the known optimum, and the tour stored is a permutation of the
 * cities whose length is that; and the set of tasks completed: every task of the bag was searched
 * exactly once (each worker counts the tasks it finished, by index, in its own array, so the
 * count needs no synchronization; the sum over the workers must be 1 for every task).  The
 * optimum alone does not see a lost task: each optimal tour lives in two tasks (it and its
 * reverse), so a task that is never searched, or searched twice, usually leaves the length right.
 * And the nodes expanded in each task against the sequential search's lower bound: after the
 * clock, each task is searched again alone with the bound fixed at the optimum.  A real run's
 * bound is never below the optimum, so it expands at least every node that search expands (a
 * node's parent is not pruned and its edge passes the test under any bound >= the optimum), task
 * by task; fewer nodes in a task mean part of it was never searched.
 */
#include "apps_common.h"

#include <math.h>

#define MAXC 22
#define MAXP 1024

static const int optimum[MAXC + 1] = {
  [8] = 1702, [9] = 1870, [10] = 2251, [11] = 2380, [12] = 2873, [13] = 2918, [14] = 2918,
  [15] = 2931, [16] = 3027, [17] = 3029, [18] = 3245, [19] = 3334, [20] = 3398, [21] = 3794,
  [22] = 3796 };

static uint64_t ncities = 14, nprocs = 8;
static const char *style = "cp";
static int d[MAXC][MAXC], minout[MAXC];
static int ntasks, task_a[MAXC * MAXC], task_b[MAXC * MAXC];

/* shared: the bound, the best tour, the bag's index */
int tsp_best, tsp_next;   /* external linkage: re-read after every ursa call (cm) */
static int best_tour[MAXC];
static uint64_t nodes_of[MAXP];
static uint8_t *done_by;                /* [worker * ntasks + task]: tasks the worker finished */
static uint64_t task_nodes[MAXC * MAXC]; /* nodes expanded in each task, by whoever searched it */
static int cp_style;
static ursa_sem_t bag_mutex, best_mutex;

struct search {
  int path[MAXC], visited[MAXC], depth, cost, rest;   /* rest: sum of minout over unvisited */
  uint64_t nodes;
};

/* The bound, read without a lock by both styles (a relaxed atomic load: a plain load on x86-64 and
 * AArch64), so that the search's code is the same in both and only the synchronization differs. */
static inline int bound_now(void) { return __atomic_load_n(&tsp_best, __ATOMIC_RELAXED); }

static void found(const struct search *s, int total) {
  if (cp_style) {
    APPS_CHECK(ursa_sem_wait(&best_mutex));
    if (total < tsp_best) {
      memcpy(best_tour, s->path, sizeof best_tour);
      __atomic_store_n(&tsp_best, total, __ATOMIC_RELAXED);
    }
    APPS_CHECK(ursa_sem_post(&best_mutex));
  } else if (total < tsp_best) {
    memcpy(best_tour, s->path, sizeof best_tour);
    __atomic_store_n(&tsp_best, total, __ATOMIC_RELAXED);
  }
}

static void dfs(struct search *s) {
  int cur = s->path[s->depth - 1], c;
  s->nodes++;
  if (s->depth == (int)ncities) {
    int total = s->cost + d[cur][0];
    if (total < bound_now()) found(s, total);
    return;
  }
  if (s->cost + minout[cur] + s->rest >= bound_now()) return;
  for (c = 1; c < (int)ncities; c++) {
    if (!s->visited[c] && s->cost + d[cur][c] < bound_now()) {
      s->visited[c] = 1;
      s->path[s->depth++] = c;
      s->cost += d[cur][c];
      s->rest -= minout[c];
      dfs(s);
      s->rest += minout[c];
      s->cost -= d[cur][c];
      s->depth--;
      s->visited[c] = 0;
    }
    ursa_tick();
  }
}

static void run_task(struct search *s, int t) {
  int a = task_a[t], b = task_b[t], c;
  memset(s->visited, 0, sizeof s->visited);
  s->visited[0] = s->visited[a] = s->visited[b] = 1;
  s->path[0] = 0; s->path[1] = a; s->path[2] = b;
  s->depth = 3;
  s->cost = d[0][a] + d[a][b];
  s->rest = 0;
  for (c = 1; c < (int)ncities; c++) if (!s->visited[c]) s->rest += minout[c];
  dfs(s);
}

static void *worker(void *arg) {
  unsigned w = (unsigned)(uintptr_t)arg;
  struct search s;
  memset(&s, 0, sizeof s);
  for (;;) {
    int t;
    if (cp_style) {
      APPS_CHECK(ursa_sem_wait(&bag_mutex));
      t = tsp_next++;
      APPS_CHECK(ursa_sem_post(&bag_mutex));
    } else {
      t = tsp_next++;
    }
    if (t >= ntasks) break;
    {
      uint64_t before = s.nodes;
      run_task(&s, t);
      __atomic_add_fetch(&task_nodes[t], s.nodes - before, __ATOMIC_RELAXED);
    }
    done_by[(size_t)w * (size_t)ntasks + (size_t)t]++;
  }
  nodes_of[w] = s.nodes;
  return NULL;
}

static int task_cmp_key(int t) { return d[0][task_a[t]] + d[task_a[t]][task_b[t]]; }

int main(int argc, char **argv) {
  static ursa_thread_t th[MAXP];
  struct apps_opt opts[] = {
    { "style", APPS_STR, &style, "cp | cm" },
    { "cities", APPS_U64, &ncities, "cities (8 .. 22: the instances whose optimum is known)" },
    { "procs", APPS_U64, &nprocs, "workers" },
    { NULL, 0, NULL, NULL } };
  struct apps_run run;
  uint64_t x = 2001, nodes = 0, i;
  int xs[MAXC], ys[MAXC], j, k, seen[MAXC], perm_ok = 1, len = 0, nn_cost = 0, cur;
  int ok, tasks_done = 0, tasks_lost = 0, tasks_twice = 0, tasks_short = 0, best_len;
  uint64_t nodes_low = 0;
  apps_parse(argc, argv, opts, "TSP, branch and bound with a shared bound (Keen et al. 6)");
  if (!apps_one_of(style, "cp cm")) { fprintf(stderr, "tsp: --style cp|cm\n"); return 2; }
  if (ncities < 8 || ncities > MAXC || nprocs < 1 || nprocs > MAXP) {
    fprintf(stderr, "tsp: need 8 <= cities <= %d and 1 <= procs <= %d\n", MAXC, MAXP);
    return 2;
  }
  cp_style = strcmp(style, "cp") == 0;
  apps_begin(&run, "tsp", style, cp_style ? APPS_CP : APPS_CM);

  for (j = 0; j < (int)ncities; j++) {
    uint64_t a;
    x += 0x9e3779b97f4a7c15ull;
    a = apps_mix64(x);
    xs[j] = (int)(a % 1000);
    ys[j] = (int)((a >> 20) % 1000);
  }
  for (j = 0; j < (int)ncities; j++) {
    minout[j] = 1 << 30;
    for (k = 0; k < (int)ncities; k++) {
      double dx = xs[j] - xs[k], dy = ys[j] - ys[k];
      d[j][k] = (int)floor(sqrt(dx * dx + dy * dy) + 0.5);
      if (k != j && d[j][k] < minout[j]) minout[j] = d[j][k];
    }
  }
  /* the bag: every prefix 0, a, b, cheapest first (insertion sort: stable, deterministic) */
  for (j = 1; j < (int)ncities; j++)
    for (k = 1; k < (int)ncities; k++)
      if (j != k) { task_a[ntasks] = j; task_b[ntasks] = k; ntasks++; }
  for (j = 1; j < ntasks; j++) {
    int a = task_a[j], b = task_b[j], key = task_cmp_key(j);
    for (k = j - 1; k >= 0 && task_cmp_key(k) > key; k--) { task_a[k + 1] = task_a[k]; task_b[k + 1] = task_b[k]; }
    task_a[k + 1] = a; task_b[k + 1] = b;
  }
  /* the first bound: the nearest-neighbour tour */
  for (j = 0; j < (int)ncities; j++) seen[j] = 0;
  seen[0] = 1; cur = 0;
  for (j = 1; j < (int)ncities; j++) {
    int bestc = -1;
    for (k = 1; k < (int)ncities; k++) if (!seen[k] && (bestc < 0 || d[cur][k] < d[cur][bestc])) bestc = k;
    seen[bestc] = 1; nn_cost += d[cur][bestc]; best_tour[j] = bestc; cur = bestc;
  }
  nn_cost += d[cur][0];
  best_tour[0] = 0;
  tsp_best = nn_cost;
  APPS_CHECK(ursa_sem_init(&bag_mutex, 1));
  APPS_CHECK(ursa_sem_init(&best_mutex, 1));
  if ((done_by = calloc((size_t)nprocs * (size_t)ntasks, 1)) == NULL) { fprintf(stderr, "tsp: out of memory\n"); return 1; }

  apps_clock_start(&run);
  for (i = 0; i < nprocs; i++) apps_spawn(&th[i], worker, (void *)(uintptr_t)i);
  for (i = 0; i < nprocs; i++) APPS_CHECK(ursa_join(th[i], NULL));
  apps_clock_stop(&run);

  for (i = 0; i < nprocs; i++) nodes += nodes_of[i];
  best_len = tsp_best;
  for (j = 0; j < ntasks; j++) {          /* the set of tasks completed: each exactly once */
    unsigned times = 0;
    for (i = 0; i < nprocs; i++) times += done_by[i * (uint64_t)ntasks + (uint64_t)j];
    if (times == 0) tasks_lost++;
    else if (times > 1) tasks_twice++;
    else tasks_done++;
  }
  free(done_by);
  /* the sequential lower bound per task: the bound fixed at the optimum (found() never runs: no
   * tour is shorter), outside the clock */
  __atomic_store_n(&tsp_best, optimum[ncities], __ATOMIC_RELAXED);
  for (j = 0; j < ntasks; j++) {
    struct search r;
    memset(&r, 0, sizeof r);
    run_task(&r, j);
    nodes_low += r.nodes;
    if (task_nodes[j] < r.nodes) tasks_short++;
  }
  __atomic_store_n(&tsp_best, best_len, __ATOMIC_RELAXED);
  for (j = 0; j < (int)ncities; j++) seen[j] = 0;
  for (j = 0; j < (int)ncities; j++) {
    int c = best_tour[j];
    if (c < 0 || c >= (int)ncities || seen[c]) perm_ok = 0;
    else seen[c] = 1;
  }
  if (best_tour[0] != 0) perm_ok = 0;
  if (perm_ok)
    for (j = 0; j < (int)ncities; j++) len += d[best_tour[j]][best_tour[(j + 1) % ncities]];
  apps_result(&run, "cities=%llu procs=%llu", (unsigned long long)ncities, (unsigned long long)nprocs);
  ok = perm_ok && tsp_best == optimum[ncities] && len == tsp_best && tasks_done == ntasks &&
       tasks_lost == 0 && tasks_twice == 0 && tasks_short == 0 && nodes >= nodes_low;
  apps_answer(&run, ok, "length=%d optimum=%d tour_valid=%d tour_length=%d first_bound=%d tasks=%d "
              "tasks_done=%d tasks_lost=%d tasks_twice=%d tasks_below_bound=%d nodes=%llu nodes_lower_bound=%llu",
              tsp_best, optimum[ncities], perm_ok, len, nn_cost, ntasks, tasks_done, tasks_lost,
              tasks_twice, tasks_short, (unsigned long long)nodes, (unsigned long long)nodes_low);
  return apps_end(&run, ok);
}
