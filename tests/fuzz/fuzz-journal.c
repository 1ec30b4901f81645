/* SPDX-License-Identifier: MIT */
/* The restore journal reader (mthp_journal_load) on arbitrary text. An
 * accepted journal has every required field, absolute paths and a known
 * state; it survives mthp_journal_save: what is saved loads back, keeps
 * every knob's path, original and written value, and a second save and
 * load changes nothing. The journal is what puts the administrator's
 * settings back, so losing a field on the way would be a real bug. */
#include <stdbool.h>

#include "fuzz-util.h"
#include "mthp/journal.h"

static char dir[192];
static char saved[sizeof(dir) + 32], input[sizeof(dir) + 32];

static void cleanup(void) {
        unlink(saved);
        unlink(input);
        rmdir(dir);
}

static void check_journal(const struct mthp_journal *j) {
        FUZZ_CHECK(j->n <= MTHP_KNOBS_MAX, "%u entries", j->n);
        FUZZ_CHECK(fuzz_terminated(j->root, sizeof(j->root)), "root");
        for (unsigned i = 0; i < j->n; i++) {
                const struct mthp_journal_entry *e = &j->e[i];
                FUZZ_CHECK(fuzz_terminated(e->path, sizeof(e->path)) && fuzz_terminated(e->id, sizeof(e->id)) &&
                                   fuzz_terminated(e->original, sizeof(e->original)) &&
                                   fuzz_terminated(e->written, sizeof(e->written)) &&
                                   fuzz_terminated(e->previous, sizeof(e->previous)) &&
                                   fuzz_terminated(e->foreign_value, sizeof(e->foreign_value)),
                           "entry %u", i);
                FUZZ_CHECK(e->path[0] == '/' && e->original[0] && e->written[0] && e->id[0], "entry %u incomplete", i);
                FUZZ_CHECK(e->state == MTHP_ENTRY_MANAGED || e->state == MTHP_ENTRY_FOREIGN, "state %d",
                           (int) e->state);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static struct mthp_journal j, j2, j3;
        char err[1024];

        if (!saved[0]) {
                /* tmpfs: mthp_journal_save fsyncs the file and its directory */
                fuzz_tmpdir(dir, sizeof(dir), "journal");
                snprintf(saved, sizeof(saved), "%s/" MTHP_JOURNAL_FILE, dir);
                /* a regular file of its own: the journal is read with
                 * O_NOFOLLOW from a checked directory (no /proc/self/fd) */
                snprintf(input, sizeof(input), "%s/input", dir);
                atexit(cleanup);
        }
        FILE *f = fopen(input, "we");
        if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
                abort();
        int r = mthp_journal_load(input, &j, err, sizeof(err));
        FUZZ_CHECK(r == 0 || r == -EBADMSG, "%d: %s", r, err);
        FUZZ_CHECK(fuzz_terminated(err, sizeof(err)), "err");
        if (r < 0) {
                FUZZ_CHECK(err[0], "refused without a message");
                return 0;
        }
        check_journal(&j);
        for (unsigned i = 0; i < j.n; i++) {
                struct mthp_journal_entry *e = mthp_journal_find(&j, j.e[i].path);
                FUZZ_CHECK(e && strcmp(e->path, j.e[i].path) == 0, "find entry %u", i);
        }

        FUZZ_CHECK(mthp_journal_save(saved, &j) == 0, "save");
        r = mthp_journal_load(saved, &j2, err, sizeof(err));
        FUZZ_CHECK(r == 0 || (j.n == 0 && r == -ENOENT), "a saved journal does not load back (%d): %s", r, err);
        FUZZ_CHECK(j2.n == j.n, "%u entries saved, %u loaded", j.n, j2.n);
        if (j.n == 0)
                return 0;       /* an empty journal is no file */
        check_journal(&j2);
        for (unsigned i = 0; i < j.n; i++) {
                const struct mthp_journal_entry *a = &j.e[i], *b = &j2.e[i];
                FUZZ_CHECK(!strcmp(a->id, b->id) && !strcmp(a->path, b->path) && !strcmp(a->original, b->original) &&
                                   !strcmp(a->written, b->written) && a->state == b->state,
                           "entry %u changed in a save and load: [%s] %s %s %s", i, a->id, a->path, a->original,
                           a->written);
                FUZZ_CHECK(!strcmp(b->previous, a->previous[0] ? a->previous : a->original), "entry %u previous", i);
        }
        FUZZ_CHECK(!strcmp(j2.root, j.root[0] ? j.root : "/"), "root '%s' became '%s'", j.root, j2.root);
        FUZZ_CHECK(mthp_journal_save(saved, &j2) == 0, "second save");
        FUZZ_CHECK(mthp_journal_load(saved, &j3, err, sizeof(err)) == 0, "second load: %s", err);
        FUZZ_CHECK(memcmp(&j2, &j3, sizeof(j2)) == 0, "a second save and load changed the journal");
        return 0;
}
