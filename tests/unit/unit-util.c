/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "mthp/journal.h"
#include "mthp/log.h"
#include "unit.h"

int fixture_setup_opts(void **state, const struct fakehost_opts *opts) {
        struct fixture *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        if (opts)
                f->opts = *opts;
        mthp_log_init("unit", false);
        assert_ok(fakehost_create_temp(&f->opts, f->dir, sizeof(f->dir)));
        if (snprintf(f->state_dir, sizeof(f->state_dir), "%s/run/mthpd", f->dir) >= (int) sizeof(f->state_dir) ||
            snprintf(f->journal, sizeof(f->journal), "%s/" MTHP_JOURNAL_FILE, f->state_dir) >= (int) sizeof(f->journal))
                fail_msg("temporary directory name too long: %s", f->dir);
        assert_ok(mthp_host_open(f->dir, &f->host));
        assert_ok(mthp_probe(f->host, &f->caps));
        *state = f;
        return 0;
}

int fixture_setup(void **state) {
        return fixture_setup_opts(state, NULL);
}

int fixture_teardown(void **state) {
        struct fixture *f = *state;
        fakehost_set_write_hook(NULL, NULL);
        mthp_host_free(f->host);
        int r = fakehost_remove(f->dir);
        free(f);
        return r < 0 ? -1 : 0;
}

void fixture_reprobe(struct fixture *f) {
        assert_ok(mthp_probe(f->host, &f->caps));
}

int fixture_knob(const struct fixture *f, const char *id) {
        int i = mthp_caps_find_knob(&f->caps, id);
        if (i < 0)
                fail_msg("no knob %s", id);
        return i;
}

const char *fixture_knob_value(const struct fixture *f, const char *id) {
        static char value[64];
        int r = fakehost_knob_read(f->dir, id, value, sizeof(value));
        if (r < 0)
                fail_msg("cannot read knob %s: %s", id, strerror(-r));
        return value;
}

const char *fixture_file(const char *dir, const char *path) {
        static char text[65536];
        text[0] = 0;
        int r;
        if (dir)
                r = fakehost_read_file(dir, path, text, sizeof(text));
        else {
                FILE *fp = fopen(path, "re");
                r = fp ? (int) fread(text, 1, sizeof(text) - 1, fp) : -errno;
                if (fp) {
                        text[r] = 0;
                        fclose(fp);
                }
        }
        if (r < 0)
                text[0] = 0;
        return text;
}

static int stderr_saved = -1;
static FILE *stderr_file;

void stderr_capture_begin(void) {
        fflush(stderr);
        stderr_file = tmpfile();
        assert_non_null(stderr_file);
        stderr_saved = dup(STDERR_FILENO);
        assert_true(stderr_saved >= 0);
        assert_true(dup2(fileno(stderr_file), STDERR_FILENO) >= 0);
}

const char *stderr_capture_end(void) {
        static char text[65536];
        fflush(stderr);
        assert_true(dup2(stderr_saved, STDERR_FILENO) >= 0);
        close(stderr_saved);
        stderr_saved = -1;
        rewind(stderr_file);
        size_t n = fread(text, 1, sizeof(text) - 1, stderr_file);
        text[n] = 0;
        fclose(stderr_file);
        return text;
}
