/*
 * examples/httpd.c - an HTTP/1.1 server of one static response, with keep-alive and pipelining,
 * one ursa thread per connection, written as straight-line code: each connection's thread reads
 * a request, writes the response, and reads the next, blocking only itself.
 *
 *   httpd [PORT]            serves "Hello, world\n" on 127.0.0.1:PORT (default 8080) until killed;
 *                           URSA_VPS sets the VPs (e.g. wrk -t2 -c100 http://127.0.0.1:8080/)
 *   httpd --self-test N M   serves on a free port and runs N keep-alive clients of M requests each
 *                           in the same process; prints "httpd: ok ..." when every response was
 *                           right (the CTest tests example_httpd_vps1/2)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <ursa.h>

static const char body[] = "Hello, world\n";
static char response[256], response_close[256];
static int response_len, response_close_len;

/* Whether the request head [h, h+len) asks to close the connection: "Connection: close", or
 * HTTP/1.0 without "Connection: keep-alive". */
static int wants_close(const char *h, size_t len) {
  const char *line = memchr(h, '\n', len), *end = h + len;
  int http10 = len > 8 && line && memmem(h, (size_t)(line - h), "HTTP/1.0", 8) != NULL;
  int close_ = 0, keep = 0;
  while (line && line + 1 < end) {
    const char *next = memchr(line + 1, '\n', (size_t)(end - line - 1));
    size_t n = (size_t)((next ? next : end) - (line + 1));
    if (n >= 11 && strncasecmp(line + 1, "connection:", 11) == 0) {
      if (memmem(line + 1, n, "close", 5)) close_ = 1;
      if (memmem(line + 1, n, "eep-alive", 9)) keep = 1;
    }
    line = next;
  }
  return close_ || (http10 && !keep);
}

/* One connection: requests in, responses out, until the client closes or asks to. */
static void *serve(void *arg) {
  int fd = (int)(intptr_t)arg;
  char buf[2048];                                      /* a request head (nginx: 1 KiB) */
  size_t have = 0;
  for (;;) {
    char *end = memmem(buf, have, "\r\n\r\n", 4);
    if (end == NULL) {                                 /* need more of the request */
      ssize_t n;
      if (have == sizeof buf) break;                   /* a head too large: give up */
      n = ursa_read(fd, buf + have, sizeof buf - have);
      if (n <= 0) break;                               /* closed, or an error */
      have += (size_t)n;
      continue;
    }
    size_t used = (size_t)(end - buf) + 4;
    int last = wants_close(buf, used);
    if (last) { ursa_write(fd, response_close, (size_t)response_close_len); break; }
    if (ursa_write(fd, response, (size_t)response_len) != response_len) break;
    memmove(buf, buf + used, have - used);             /* a pipelined request may follow */
    have -= used;
  }
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
  if (bind(l, (struct sockaddr *)a, sizeof *a) != 0 || listen(l, 4096) != 0) return -1;
  getsockname(l, (struct sockaddr *)a, &al);
  return l;
}

static void *accept_loop(void *arg) {
  int l = (int)(intptr_t)arg, c;
  ursa_attr_t at;
  ursa_attr_init(&at);
  ursa_attr_setdetached(&at, 1);
  ursa_attr_setstacksize(&at, 32768);                 /* a connection's thread needs little */
  ursa_attr_setvp(&at, URSA_VP_ANY);                  /* spread connections over the VPs */
  while ((c = ursa_accept(l, NULL, NULL)) >= 0) {
    ursa_thread_t t;
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (ursa_create(&t, &at, serve, (void *)(intptr_t)c) != 0) ursa_close(c);
  }
  return NULL;                                         /* the listener was closed */
}

/* ---- --self-test ------------------------------------------------------------------------------- */

static struct sockaddr_in server;
static int requests;

/* Reads k responses (the server's are all alike: k times the same bytes, the last one with
 * "Connection: close" when closing); 0 when they are the expected ones. */
static int read_responses(int fd, int k, int closing) {
  char buf[1024];
  size_t want = (size_t)(k - closing) * (size_t)response_len + (closing ? (size_t)response_close_len : 0), have = 0;
  int i;
  if (want > sizeof buf) return 1;
  while (have < want) {
    ssize_t n = ursa_read(fd, buf + have, want - have);
    if (n <= 0) return 1;
    have += (size_t)n;
  }
  for (i = 0; i < k - closing; i++)
    if (memcmp(buf + (size_t)i * (size_t)response_len, response, (size_t)response_len) != 0) return 1;
  return closing && memcmp(buf + want - (size_t)response_close_len, response_close, (size_t)response_close_len) != 0;
}

static void *client(void *arg) {
  static const char req[] = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
  static const char last[] = "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  int fd = socket(AF_INET, SOCK_STREAM, 0), i;
  char c;
  (void)arg;
  if (fd < 0 || ursa_connect(fd, (struct sockaddr *)&server, sizeof server) != 0) return (void *)1;
  for (i = 0; i + 1 < requests; i += 2) {              /* two pipelined requests at a time */
    char two[2 * sizeof req];
    memcpy(two, req, sizeof req - 1);
    memcpy(two + sizeof req - 1, req, sizeof req - 1);
    if (ursa_write(fd, two, 2 * (sizeof req - 1)) != (ssize_t)(2 * (sizeof req - 1))) return (void *)2;
    if (read_responses(fd, 2, 0)) return (void *)3;
  }
  if (ursa_write(fd, last, sizeof last - 1) != (ssize_t)(sizeof last - 1) || read_responses(fd, 1, 1)) return (void *)4;
  if (ursa_read(fd, &c, 1) != 0) return (void *)5;     /* the server closed it */
  ursa_close(fd);
  return NULL;
}

int main(int argc, char **argv) {
  int l, err;
  ursa_thread_t acc;
  response_len = snprintf(response, sizeof response,
                          "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n%s",
                          strlen(body), body);
  response_close_len = snprintf(response_close, sizeof response_close,
                                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                                "Connection: close\r\n\r\n%s", strlen(body), body);
  if ((err = ursa_init(NULL)) != 0) { fprintf(stderr, "httpd: ursa_init: %s\n", ursa_strerror(err)); return 1; }
  if (argc == 4 && strcmp(argv[1], "--self-test") == 0) {
    int n = atoi(argv[2]), i, bad = 0;
    ursa_thread_t *t = calloc((size_t)n, sizeof *t);
    requests = atoi(argv[3]);
    if (t == NULL || (l = listen_on(0, &server)) < 0) { perror("httpd"); return 1; }
    ursa_create(&acc, NULL, accept_loop, (void *)(intptr_t)l);
    for (i = 0; i < n; i++) {
      ursa_attr_t at;
      ursa_attr_init(&at);
      ursa_attr_setvp(&at, URSA_VP_ANY);
      if (ursa_create(&t[i], &at, client, NULL) != 0) return 1;
    }
    for (i = 0; i < n; i++) {
      void *r;
      ursa_join(t[i], &r);
      bad += r != NULL;
    }
    ursa_close(l);
    ursa_join(acc, NULL);
    printf("httpd: %s: %d clients, %d requests each, %d failed, engine %s, %u VPs\n", bad ? "FAILED" : "ok", n,
           requests, bad, ursa_io_engine(), ursa_vp_count());
    free(t);
    return bad != 0;
  }
  if ((l = listen_on(argc > 1 ? atoi(argv[1]) : 8080, &server)) < 0) { perror("httpd: listen"); return 1; }
  printf("httpd: serving on 127.0.0.1:%d (%s, %u VPs)\n", ntohs(server.sin_port), ursa_io_engine(), ursa_vp_count());
  fflush(stdout);
  accept_loop((void *)(intptr_t)l);
  return 0;
}
