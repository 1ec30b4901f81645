/* SPDX-License-Identifier: MIT */
/* Shared helpers of the libFuzzer targets (tests/fuzz/README.md). */
#pragma once
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* An invariant of the parser under test does not hold: say which, then abort
 * so that libFuzzer saves the input as a crash. */
#define FUZZ_CHECK(cond, ...)                                                                  \
        do {                                                                                   \
                if (!(cond)) {                                                                 \
                        fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__, __LINE__, #cond); \
                        fprintf(stderr, __VA_ARGS__);                                          \
                        fputc('\n', stderr);                                                   \
                        abort();                                                               \
                }                                                                              \
        } while (0)

/* The input as a C string in a heap block of exactly its size, so that
 * ASan sees any read past the terminating NUL. Inputs with an embedded NUL
 * end there, as they would for the C string parsers. */
static inline char *fuzz_strdup(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = 0;
        return s;
}

/* A C string is terminated inside its array. */
static inline int fuzz_terminated(const char *s, size_t size) {
        return memchr(s, 0, size) != NULL;
}

/* A private directory, on tmpfs where there is one (the code under test may
 * fsync), else in $TMPDIR or /tmp. */
static inline void fuzz_tmpdir(char *dir, size_t size, const char *name) {
        const char *tmp = getenv("TMPDIR");
        const char *bases[] = { "/dev/shm", tmp && *tmp ? tmp : "/tmp", "/tmp" };
        for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
                snprintf(dir, size, "%s/mthp-fuzz-%s-XXXXXX", bases[i], name);
                if (mkdtemp(dir))
                        return;
        }
        perror("mkdtemp");
        abort();
}

/* A memfd the readers that only take a path can open as /proc/self/fd/N. */
struct fuzz_file {
        int fd;
        char path[64];
};

static inline void fuzz_file_init(struct fuzz_file *f, const char *name) {
        f->fd = memfd_create(name, MFD_CLOEXEC);
        if (f->fd < 0) {
                perror("memfd_create");
                abort();
        }
        snprintf(f->path, sizeof(f->path), "/proc/self/fd/%d", f->fd);
}

static inline void fuzz_file_set(struct fuzz_file *f, const void *data, size_t size) {
        if (ftruncate(f->fd, 0) < 0 || (size && pwrite(f->fd, data, size, 0) != (ssize_t) size)) {
                perror("memfd write");
                abort();
        }
}

/* The whole file, NUL-terminated (malloc'd; *size gets its length). */
static inline char *fuzz_file_get(const struct fuzz_file *f, size_t *size) {
        off_t len = lseek(f->fd, 0, SEEK_END);
        if (len < 0)
                abort();
        char *buf = malloc((size_t) len + 1);
        if (!buf || pread(f->fd, buf, (size_t) len, 0) != len)
                abort();
        buf[len] = 0;
        *size = (size_t) len;
        return buf;
}
