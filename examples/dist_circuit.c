/*
 * dist_circuit.c - SplitThreads' digital circuit simulation (section 7.2) across MPI ranks: a
 * thread per gate of an N-bit ripple-carry adder (5 gates per bit), each sleeping until its
 * inputs arrive and then producing its output, for V input vectors in a row.
 *
 *   mpiexec -n R build/dist_circuit [bits [vectors [any|rr]]]
 *
 * A wire carries one value per vector: cell wire * vectors + v of one I-structure array
 * distributed by block over the ranks (ursa_dist_iarray_*).  Rank 0 creates the gates' threads (by URSA_RANK_ANY, default, or round robin), then
 * writes the input vectors (so the gates wait first), then reads each sum and carry out; a gate
 * reads its inputs (waiting, suspended, while they are empty) and writes its output.  The answer
 * is checked against a + b computed directly for every vector; exit status 1 when one differs.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ursa.h>
#include <ursa/dist.h>

enum { G_XOR, G_AND, G_OR };
#define VMAX 64

struct gate { int32_t type, vectors, in1, in2, out; ursa_dist_iarray_t w; };   /* wires: cells w * vectors + v */

static ssize_t gate_task(const void *arg, size_t len, void *res, size_t cap) {
  struct gate g;
  (void)res; (void)cap;
  if (len != sizeof g) return -22;
  memcpy(&g, arg, sizeof g);
  for (int v = 0; v < g.vectors; v++) {
    uint8_t a, b, o;
    int rc;
    uint64_t n = (uint64_t)g.vectors;
    if ((rc = ursa_dist_iarray_read(g.w, (uint64_t)g.in1 * n + (uint64_t)v, &a, 1, NULL)) ||
        (rc = ursa_dist_iarray_read(g.w, (uint64_t)g.in2 * n + (uint64_t)v, &b, 1, NULL)))
      return rc;
    o = g.type == G_XOR ? a ^ b : g.type == G_AND ? a & b : a | b;
    if ((rc = ursa_dist_iarray_write(g.w, (uint64_t)g.out * n + (uint64_t)v, &o, 1))) return rc;
  }
  return 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  int bits = argc > 1 ? atoi(argv[1]) : 16, vectors = argc > 2 ? atoi(argv[2]) : 8;
  int any = !(argc > 3 && strcmp(argv[3], "rr") == 0), status = 0;
  if (bits < 1 || bits > 62 || vectors < 1 || vectors > VMAX) {
    fprintf(stderr, "usage: dist_circuit [bits 1..62 [vectors 1..%d [any|rr]]]\n", VMAX);
    return 2;
  }
  if (ursa_init(NULL) != 0 || ursa_dist_init(&argc, &argv) != 0) return 1;
  ursa_dist_register("gate", gate_task);
  ursa_dist_barrier_all();
  int rank = ursa_dist_rank(), size = ursa_dist_size();
  if (rank == 0) {
    /* wires: a[i], b[i], carry[0..bits] (carry[0] = 0), sum[i], and per bit s1, c1, c2 */
    int A = 0, B = bits, C = 2 * bits, S = 3 * bits + 1, S1 = 4 * bits + 1, C1 = 5 * bits + 1, C2 = 6 * bits + 1;
    int nwires = 7 * bits + 1, ngates = 5 * bits;
    ursa_dist_iarray_t w;
    struct gate *g = calloc((size_t)ngates, sizeof *g);
    ursa_dist_thread_t *th = malloc(sizeof *th * (size_t)ngates);
    uint64_t *va = malloc(sizeof *va * (size_t)vectors), *vb = malloc(sizeof *vb * (size_t)vectors);
    double t0 = now();
    if (ursa_dist_iarray_create((uint64_t)nwires * (uint64_t)vectors, &w) != 0) {
      fprintf(stderr, "dist_circuit: iarray_create failed\n");
      return 1;
    }
#define W(wire, v) ((uint64_t)(wire) * (uint64_t)vectors + (uint64_t)(v))
    for (int i = 0, k = 0; i < bits; i++) {
      int ins[5][3] = {{G_XOR, A + i, B + i}, {G_AND, A + i, B + i}, {G_XOR, S1 + i, C + i},
                       {G_AND, S1 + i, C + i}, {G_OR, C1 + i, C2 + i}};
      int outs[5] = {S1 + i, C1 + i, S + i, C2 + i, C + i + 1};
      for (int j = 0; j < 5; j++, k++) {
        g[k].type = ins[j][0];
        g[k].vectors = vectors;
        g[k].in1 = ins[j][1];
        g[k].in2 = ins[j][2];
        g[k].out = outs[j];
        g[k].w = w;
        int rc = ursa_dist_create(&th[k], any ? URSA_RANK_ANY : k % size, "gate", &g[k], sizeof g[k], 0);
        if (rc) { fprintf(stderr, "dist_circuit: create: %s\n", ursa_strerror(rc)); return 1; }
      }
    }
    uint64_t mask = (1ull << bits) - 1, x = 0x9e3779b97f4a7c15ull;
    for (int v = 0; v < vectors; v++) {                /* the inputs, after the gates wait */
      x ^= x << 13; x ^= x >> 7; x ^= x << 17; va[v] = x & mask;
      x ^= x << 13; x ^= x >> 7; x ^= x << 17; vb[v] = x & mask;
      uint8_t zero = 0;
      ursa_dist_iarray_write(w, W(C, v), &zero, 1);
      for (int i = 0; i < bits; i++) {
        uint8_t a = (va[v] >> i) & 1, b = (vb[v] >> i) & 1;
        ursa_dist_iarray_write(w, W(A + i, v), &a, 1);
        ursa_dist_iarray_write(w, W(B + i, v), &b, 1);
      }
    }
    int wrong = 0;
    for (int v = 0; v < vectors; v++) {
      uint64_t sum = 0;
      uint8_t bit;
      for (int i = 0; i < bits; i++) {
        ursa_dist_iarray_read(w, W(S + i, v), &bit, 1, NULL);
        sum |= (uint64_t)bit << i;
      }
      ursa_dist_iarray_read(w, W(C + bits, v), &bit, 1, NULL);
      sum |= (uint64_t)bit << bits;
      if (sum != va[v] + vb[v]) wrong++;
    }
    int failed = 0, *where = calloc((size_t)size, sizeof *where);
    for (int k = 0; k < ngates; k++) {
      where[ursa_dist_thread_rank(th[k])]++;
      if (ursa_dist_join(th[k], NULL, 0, NULL) != 0) failed++;
    }
    double t1 = now();
    printf("dist_circuit: %d ranks, %s, %d-bit adder, %d gate threads, %d vectors, an I-structure array of %d cells: %.3f s; "
           "sums %s (%d wrong), gates %s; threads per rank:", size, any ? "wildcard" : "round robin", bits, ngates,
           vectors, nwires * vectors, t1 - t0, wrong ? "WRONG" : "checked", wrong, failed ? "FAILED" : "ok");
    for (int r = 0; r < size; r++) printf(" %d", where[r]);
    printf("\n");
    status = wrong || failed;
    if (ursa_dist_iarray_destroy(w) != 0) status = 1;
    free(g); free(th); free(va); free(vb); free(where);
  }
  ursa_dist_finalize();
  ursa_fini();
  return status;
}
