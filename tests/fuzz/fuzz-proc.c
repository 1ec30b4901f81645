/* SPDX-License-Identifier: MIT */
/* Per-process files of the density sampler and procinfo: /proc/PID/stat
 * (mthp_proc_parse_stat), /proc/PID/maps lines
 * (mthp_proc_parse_maps_line, mthp_proc_mapping_kind) and
 * /proc/PID/cgroup (mthp_procinfo_parse_cgroup) for every layout. */
#include "fuzz-util.h"
#include "mthp/density.h"
#include "mthp/procinfo.h"

static void check_stat(const char *text) {
        struct mthp_proc_stat st;
        int r = mthp_proc_parse_stat(text, &st);
        FUZZ_CHECK(r == 0 || r == -EBADMSG, "%d", r);
        if (r == 0) {
                FUZZ_CHECK(st.pid > 0, "pid %d", (int) st.pid);
                FUZZ_CHECK(fuzz_terminated(st.comm, sizeof(st.comm)), "comm");
                FUZZ_CHECK(strchr(text, '(') && strrchr(text, ')'), "no (comm)");
        }
}

static void check_maps(const char *text, size_t size) {
        const char *p = text, *end = text + size;
        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t) (end - p));
                size_t len = eol ? (size_t) (eol - p) + 1 : (size_t) (end - p);
                struct mthp_mapping m;
                int r = mthp_proc_parse_maps_line(p, len, &m);
                FUZZ_CHECK(r == 0 || r == -EBADMSG, "%d", r);
                if (r == 0) {
                        FUZZ_CHECK(m.start <= m.end, "%llx-%llx", (unsigned long long) m.start,
                                   (unsigned long long) m.end);
                        FUZZ_CHECK(m.name >= p && m.name + m.name_len <= p + len, "name outside the line");
                        FUZZ_CHECK(fuzz_terminated(m.perms, sizeof(m.perms)), "perms");
                        int k = mthp_proc_mapping_kind(&m);
                        FUZZ_CHECK(k == MTHP_ANON || k == MTHP_SHMEM || k == -ENOENT, "kind %d", k);
                }
                p += len;
        }
}

static void check_cgroup(const char *text) {
        static const enum mthp_cg_layout layouts[] = { MTHP_CG_NONE, MTHP_CG_V1, MTHP_CG_HYBRID, MTHP_CG_V2 };
        static const size_t sizes[] = { 1, 2, 16, 128, 4096 };
        for (unsigned l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++)
                for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                        char *memcg = malloc(sizes[s]);
                        int r = mthp_procinfo_parse_cgroup(text, layouts[l], memcg, sizes[s]);
                        FUZZ_CHECK(r == 0 || r == -ENOENT || r == -ENAMETOOLONG, "%d", r);
                        if (r == 0) {
                                FUZZ_CHECK(fuzz_terminated(memcg, sizes[s]), "memcg");
                                FUZZ_CHECK(!strchr(memcg, '\n'), "newline in '%s'", memcg);
                                FUZZ_CHECK(strstr(text, memcg) != NULL, "'%s' is not in the text", memcg);
                        }
                        free(memcg);
                }
}

/* smaps VmFlags: only the two bits, each only if its word is there. */
static void check_vmflags(const char *raw, size_t size) {
        unsigned f = mthp_proc_parse_vmflags(raw, size);
        FUZZ_CHECK((f & ~(MTHP_VMA_HUGEPAGE | MTHP_VMA_NOHUGEPAGE)) == 0, "flags 0x%x", f);
        FUZZ_CHECK(!(f & MTHP_VMA_HUGEPAGE) || memmem(raw, size, "hg", 2), "hg without 'hg'");
        FUZZ_CHECK(!(f & MTHP_VMA_NOHUGEPAGE) || memmem(raw, size, "nh", 2), "nh without 'nh'");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_strdup(data, size);
        check_stat(text);
        /* maps lines are length-delimited: give the parser the raw bytes in
         * a block of exactly their size */
        char *raw = malloc(size ? size : 1);
        memcpy(raw, data, size);
        check_maps(raw, size);
        check_vmflags(raw, size);
        free(raw);
        check_cgroup(text);
        free(text);
        return 0;
}
