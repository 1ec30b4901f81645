/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mthp/util.h"

void mthp_closep(int *fd) {
        if (*fd >= 0)
                close(*fd);
}

void mthp_freep(void *p) {
        free(*(void **) p);
}

uint64_t mthp_now_nsec(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

uint64_t mthp_now_usec(clockid_t clock) {
        return mthp_now_nsec(clock) / 1000;
}

int mthp_strcpy(char *dst, size_t size, const char *src) {
        size_t len = strlen(src);
        if (size == 0)
                return -ENAMETOOLONG;
        if (len >= size) {
                memcpy(dst, src, size - 1);
                dst[size - 1] = 0;
                return -ENAMETOOLONG;
        }
        memcpy(dst, src, len + 1);
        return 0;
}

int mthp_grow(void **p, size_t *cap, size_t need, size_t elem) {
        if (need <= *cap)
                return 0;
        size_t n = *cap ? *cap : 16;
        while (n < need)
                n *= 2;
        void *q = realloc(*p, n * elem);
        if (!q)
                return -ENOMEM;
        *p = q;
        *cap = n;
        return 0;
}
