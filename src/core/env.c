/*
 * env.c - the one reader of ursa's environment variables (URSA_*).
 *
 * Every value is checked the same way: a value that is not what the variable takes (not a
 * number, negative, out of range, too large for its type, an unknown word, trailing garbage) is
 * ignored with one line on stderr that names the variable, the value and what it takes, and the
 * default applies.  An unset or empty variable gives the default silently.  Called by ursa_init
 * and the layers' set-up (model, trace, the hard build's seed) on the initializing kernel thread;
 * never on a hot path.
 */
#include "base.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *value_of(const char *name) {
  const char *v = getenv(name);
  return v != NULL && *v != '\0' ? v : NULL;
}

/* A decimal number without sign: 0 and *out on success, -1 when v is not one or overflows. */
static int parse_number(const char *v, const char **rest, unsigned long long *out) {
  char *end;
  if (!isdigit((unsigned char)*v)) return -1;          /* "-1", " 5", "+3": not ours to guess */
  errno = 0;
  *out = strtoull(v, &end, 10);
  if (errno != 0) return -1;                           /* ERANGE: too large for 64 bits */
  *rest = end;
  return 0;
}

unsigned long long ursa__env_number(const char *name, unsigned long long lo, unsigned long long hi,
                                    unsigned long long def) {
  const char *v = value_of(name), *rest;
  unsigned long long n;
  if (v == NULL) return def;
  if (parse_number(v, &rest, &n) == 0 && *rest == '\0' && n >= lo && n <= hi) return n;
  fprintf(stderr, "ursa: ignoring %s=%s: not a number from %llu to %llu\n", name, v, lo, hi);
  return def;
}

unsigned long long ursa__env_size(const char *name, unsigned long long lo, unsigned long long hi,
                                  unsigned long long def) {
  const char *v = value_of(name), *rest;
  unsigned long long n;
  unsigned shift = 0;
  if (v == NULL) return def;
  if (parse_number(v, &rest, &n) == 0) {
    switch (toupper((unsigned char)*rest)) {
    case 'K': shift = 10; rest++; break;
    case 'M': shift = 20; rest++; break;
    case 'G': shift = 30; rest++; break;
    case 'T': shift = 40; rest++; break;
    default: break;
    }
    if (shift != 0 && toupper((unsigned char)*rest) == 'I') rest++;          /* KiB, MiB */
    if (toupper((unsigned char)*rest) == 'B') rest++;
    if (*rest == '\0' && n <= (hi >> shift) && (n << shift) >= lo) return n << shift;
  }
  fprintf(stderr, "ursa: ignoring %s=%s: not a size from %llu to %llu bytes (a number, or with K, M, G "
                  "or T)\n", name, v, lo, hi);
  return def;
}

int ursa__env_flag(const char *name, int def) {
  static const char *const words[] = { "0", "1", "off", "on", "no", "yes", "false", "true" };
  const char *v = value_of(name);
  unsigned i;
  if (v == NULL) return def;
  for (i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strcasecmp(v, words[i]) == 0) return (int)(i & 1);
  fprintf(stderr, "ursa: ignoring %s=%s: not 0 or 1\n", name, v);
  return def;
}

int ursa__env_word(const char *name, const char *const *words, int n, int def) {
  const char *v = value_of(name);
  int i;
  if (v == NULL) return def;
  for (i = 0; i < n; i++)
    if (words[i] != NULL && strcmp(v, words[i]) == 0) return i;
  {                                                   /* "not a, b or c" */
    char msg[256];
    int len = 0, left = 0, k;
    for (i = 0; i < n; i++) left += words[i] != NULL;
    for (i = 0, k = 0; i < n && len < (int)sizeof msg; i++) {
      if (words[i] == NULL) continue;
      k++;
      len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%s", k == 1 ? "" : k == left ? " or " : ", ", words[i]);
    }
    fprintf(stderr, "ursa: ignoring %s=%s: not %s\n", name, v, msg);
  }
  return def;
}
