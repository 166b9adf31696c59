/*
 * examples/echo.c - a TCP echo server with one ursa thread per connection, written as
 * straight-line code: each connection's thread reads and writes as if it were alone, and blocks
 * only itself (include/ursa.h, "I/O that blocks only the calling thread").
 *
 *   echo [PORT]            serves on 127.0.0.1:PORT (default 7007) until killed
 *   echo --self-test N M   serves on a free port and runs N client threads, M messages each,
 *                          in the same process; prints "echo: ok ..." and exits 0 when every
 *                          answer matched (the CTest test example_echo)
 * URSA_VPS picks the number of VPs as for any ursa program.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <ursa.h>

static void *serve(void *arg) {                 /* one connection, start to end */
  int fd = (int)(intptr_t)arg;
  char buf[4096];
  ssize_t n;
  while ((n = ursa_read(fd, buf, sizeof buf)) > 0)
    if (ursa_write(fd, buf, (size_t)n) != n) break;
  ursa_close(fd);
  return NULL;
}

static int listen_on(int port, struct sockaddr_in *a) {
  int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  socklen_t al = sizeof *a;
  if (l < 0) return -1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  memset(a, 0, sizeof *a);
  a->sin_family = AF_INET;
  a->sin_port = htons((unsigned short)port);
  a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(l, (struct sockaddr *)a, sizeof *a) != 0 || listen(l, 1024) != 0) return -1;
  getsockname(l, (struct sockaddr *)a, &al);
  return l;
}

static void *accept_loop(void *arg) {
  int l = (int)(intptr_t)arg, c;
  ursa_attr_t at;
  ursa_attr_init(&at);
  ursa_attr_setdetached(&at, 1);
  ursa_attr_setvp(&at, URSA_VP_ANY);            /* spread connections over the VPs */
  while ((c = ursa_accept(l, NULL, NULL)) >= 0) {
    ursa_thread_t t;
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (ursa_create(&t, &at, serve, (void *)(intptr_t)c) != 0) ursa_close(c);
  }
  return NULL;                                  /* the listener was closed */
}

/* ---- --self-test: clients in the same process -------------------------------------------------- */

static struct sockaddr_in server;
static int messages;

static void *client(void *arg) {
  int id = (int)(intptr_t)arg, fd = socket(AF_INET, SOCK_STREAM, 0), i;
  char out[64], in[64];
  if (fd < 0 || ursa_connect(fd, (struct sockaddr *)&server, sizeof server) != 0) return (void *)1;
  for (i = 0; i < messages; i++) {
    int len = snprintf(out, sizeof out, "client %d message %d\n", id, i), got = 0;
    if (ursa_write(fd, out, (size_t)len) != len) return (void *)2;
    while (got < len) {                         /* TCP may split the answer */
      ssize_t r = ursa_read(fd, in + got, (size_t)(len - got));
      if (r <= 0) return (void *)3;
      got += (int)r;
    }
    if (memcmp(in, out, (size_t)len) != 0) return (void *)4;
  }
  ursa_close(fd);
  return NULL;
}

int main(int argc, char **argv) {
  int l, err;
  ursa_thread_t acc;
  if ((err = ursa_init(NULL)) != 0) { fprintf(stderr, "echo: ursa_init: %s\n", ursa_strerror(err)); return 1; }
  if (argc == 4 && strcmp(argv[1], "--self-test") == 0) {
    int n = atoi(argv[2]), i, bad = 0;
    ursa_thread_t *t = calloc((size_t)n, sizeof *t);
    messages = atoi(argv[3]);
    if (t == NULL || (l = listen_on(0, &server)) < 0) { perror("echo"); return 1; }
    ursa_create(&acc, NULL, accept_loop, (void *)(intptr_t)l);
    for (i = 0; i < n; i++) {
      ursa_attr_t at;
      ursa_attr_init(&at);
      ursa_attr_setvp(&at, URSA_VP_ANY);
      if (ursa_create(&t[i], &at, client, (void *)(intptr_t)i) != 0) return 1;
    }
    for (i = 0; i < n; i++) {
      void *r;
      ursa_join(t[i], &r);
      bad += r != NULL;
    }
    ursa_close(l);                              /* the accept loop ends */
    ursa_join(acc, NULL);
    printf("echo: %s: %d clients, %d messages each, %d failed, engine %s, %u VPs\n", bad ? "FAILED" : "ok", n,
           messages, bad, ursa_io_engine(), ursa_vp_count());
    free(t);
    return bad != 0;
  }
  if ((l = listen_on(argc > 1 ? atoi(argv[1]) : 7007, &server)) < 0) { perror("echo: listen"); return 1; }
  printf("echo: serving on 127.0.0.1:%d (%s, %u VPs)\n", ntohs(server.sin_port), ursa_io_engine(), ursa_vp_count());
  fflush(stdout);
  accept_loop((void *)(intptr_t)l);
  return 0;
}
