/*
 * Helpers shared by the host-lane tests: reading the dynamic symbol table of
 * the built library with nm, and small string checks. Uses popen(): define
 * _POSIX_C_SOURCE (200809L) or _GNU_SOURCE before the first #include.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#ifndef T4A_HOST_SUPPORT_H
#define T4A_HOST_SUPPORT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The nm used to list the library's dynamic symbols (CMAKE_NM when the
 * build passes it). */
#ifndef T4A_TEST_NM
#define T4A_TEST_NM "nm"
#endif

/** Capacity of t4a_test_symbol::name and ::version. */
#define T4A_TEST_SYMBOL_CAPACITY 128

/** One line of `nm -D --defined-only`. */
typedef struct t4a_test_symbol {
  char type;                              /* 'T', 'A', 'D', ... */
  char name[T4A_TEST_SYMBOL_CAPACITY];    /* without the version suffix */
  char version[T4A_TEST_SYMBOL_CAPACITY]; /* "T4ACUDA_0", "" if none */
  int default_version;                    /* 1 for "@@", 0 for "@" */
} t4a_test_symbol;

/* Copies `src` into `dst` (`capacity` bytes), truncating, NUL-terminated. */
static inline void t4a_test_copy(char *dst, size_t capacity, const char *src) {
  size_t n = strlen(src);
  if (n >= capacity) n = capacity - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/*
 * Lists the defined dynamic symbols of the shared library at `path` into
 * out[0..max-1]. Returns how many there are (possibly more than `max`; only
 * `max` are stored), or -1 when nm cannot be run, fails, or prints a line
 * this parser does not understand; `why` (if not NULL, `why_capacity`
 * bytes) then says what went wrong.
 */
static inline long t4a_test_read_dynamic_symbols(const char *path,
                                                 t4a_test_symbol *out,
                                                 size_t max, char *why,
                                                 size_t why_capacity) {
  char command[4096];
  char line[1024];
  long count = 0;
  FILE *pipe;
  int rc;
  if (why != NULL && why_capacity > 0) why[0] = '\0';
  if (strchr(path, '\'') != NULL) {
    if (why != NULL)
      snprintf(why, why_capacity, "path has a quote: %.900s", path);
    return -1;
  }
  if (snprintf(command, sizeof command, "%s -D --defined-only '%s' 2>&1",
               T4A_TEST_NM, path) >= (int)sizeof command) {
    if (why != NULL) snprintf(why, why_capacity, "path too long: %.900s", path);
    return -1;
  }
  pipe = popen(command, "r");
  if (pipe == NULL) {
    if (why != NULL)
      snprintf(why, why_capacity, "popen(%.900s) failed", command);
    return -1;
  }
  while (fgets(line, sizeof line, pipe) != NULL) {
    /* "<address> <type> <name>[@[@]<version>]\n" */
    char address[64], type[8], symbol[512];
    char *at;
    t4a_test_symbol s;
    if (sscanf(line, "%63s %7s %511s", address, type, symbol) != 3 ||
        strlen(type) != 1) {
      if (why != NULL)
        snprintf(why, why_capacity, "unexpected nm output: %.900s", line);
      count = -1;
      continue; /* drain the pipe before pclose */
    }
    if (count < 0) continue;
    memset(&s, 0, sizeof s);
    s.type = type[0];
    at = strchr(symbol, '@');
    if (at != NULL) {
      s.default_version = at[1] == '@';
      t4a_test_copy(s.version, sizeof s.version,
                    at + (s.default_version ? 2 : 1));
      *at = '\0';
    }
    t4a_test_copy(s.name, sizeof s.name, symbol);
    if ((size_t)count < max) out[count] = s;
    ++count;
  }
  rc = pclose(pipe);
  if (rc != 0 && count >= 0) {
    if (why != NULL)
      snprintf(why, why_capacity, "'%.900s' exited with status %d", command,
               rc);
    return -1;
  }
  if (count == 0 && why != NULL)
    snprintf(why, why_capacity, "'%.900s' printed no symbol", command);
  return count;
}

/* Whether `s` contains `part`. */
static inline int t4a_test_contains(const char *s, const char *part) {
  return s != NULL && part != NULL && strstr(s, part) != NULL;
}

/* Whether `s` starts with `prefix`. */
static inline int t4a_test_starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

#endif /* T4A_HOST_SUPPORT_H */
