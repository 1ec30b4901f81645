/* SPDX-License-Identifier: MIT */
/* mthpctl check: validate mthpd.conf and policy files. */
#include "mthpctl.h"

static bool is_policy_file(const char *path) {
        size_t n = strlen(path);
        return n > 7 && strcmp(path + n - 7, ".policy") == 0;
}

static bool is_dir(const char *path) {
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Errors of a set of policy files come as one text: each file's are the
 * lines that start with its name; a directory's (is_dir) also those of the
 * files in it. */
static void print_check(struct ctl *c, const char *file, bool is_dir, bool valid, const char *err,
                        bool *first_file) {
        if (!c->json) {
                if (valid) {
                        char clean[MTHP_PATH_MAX * 4];
                        printf("%s: ok\n", mthp_escape(clean, sizeof(clean), file));
                }
                return;
        }
        printf("%s{\"file\":", *first_file ? "" : ",");
        *first_file = false;
        json_str(file);
        printf(",\"valid\":%s,\"errors\":[", valid ? "true" : "false");
        bool first = true;
        for (const char *l = err; l && *l;) {
                size_t len = strcspn(l, "\n");
                if (len && mthp_error_line_is_about(l, len, file, is_dir)) {
                        char line[2048];
                        snprintf(line, sizeof(line), "%.*s", (int) len, l);
                        printf(first ? "" : ",");
                        json_str(line);
                        first = false;
                }
                l += len + (l[len] == '\n');
        }
        printf("]}");
}

/* Does any line of err belong to file? */
static bool errors_about(const char *err, const char *file) {
        for (const char *l = err; *l;) {
                size_t len = strcspn(l, "\n");
                if (mthp_error_line_is_about(l, len, file, false))
                        return true;
                l += len + (l[len] == '\n');
        }
        return false;
}

/* The lines of err about file, or (file NULL) about none of files[n]. */
static void print_errors_about(const char *err, const char *file, const char *const *files, size_t n,
                               bool json, bool *first) {
        for (const char *l = err; *l;) {
                size_t len = strcspn(l, "\n");
                bool about;
                if (file)
                        about = mthp_error_line_is_about(l, len, file, false);
                else {
                        about = len > 0;
                        for (size_t j = 0; j < n && about; j++)
                                about = !mthp_error_line_is_about(l, len, files[j], false);
                }
                if (about) {
                        char *line = xrealloc(NULL, len + 2);
                        snprintf(line, len + 2, "%.*s%s", (int) len, l, json ? "" : "\n");
                        if (json) {
                                printf(*first ? "" : ",");
                                json_str(line);
                                *first = false;
                        } else
                                print_errors(line);
                        free(line);
                }
                l += len + (l[len] == '\n');
        }
}

/* Policy files named on the command line: each alone, so that its own
 * errors are found whatever the others hold and however many there are,
 * then together as mthpd loads them (a cgroup matched in two files; more
 * files than mthpd loads). Returns the number of invalid files; *set_error
 * says the set as a whole is refused (its errors are in set_err). */
static int check_policy_files(struct ctl *c, const char *const *files, size_t n, bool *first_file,
                              char *set_err, size_t errsz, bool *set_error) {
        char *err = xrealloc(NULL, errsz);
        struct mthp_policy_set *set = NULL;
        int bad = 0;
        set_err[0] = 0;
        *set_error = false;
        if (n > MTHP_POLICIES_MAX) {
                snprintf(set_err, errsz, "mthpctl check: %zu policy files, mthpd loads at most %d\n", n,
                         MTHP_POLICIES_MAX);
                *set_error = true;
        } else if (mthp_policy_load_files(files, n, true, &set, set_err, errsz) < 0)
                *set_error = true;
        mthp_policy_set_free(set);
        for (size_t j = 0; j < n; j++) {
                set = NULL;
                err[0] = 0;
                bool valid = mthp_policy_load_files(&files[j], 1, true, &set, err, errsz) == 0;
                mthp_policy_set_free(set);
                const char *why = err;
                if (!valid && !c->json)
                        print_errors(err);
                if (valid && *set_error && errors_about(set_err, files[j])) {
                        valid = false;
                        why = set_err;
                        if (!c->json)
                                print_errors_about(set_err, files[j], NULL, 0, false, NULL);
                }
                bad += !valid;
                print_check(c, files[j], false, valid, why, first_file);
        }
        free(err);
        return bad;
}

/* A configuration of several files, checked together as mthpd reads it:
 * each file ok or its errors; the values of all of them in cfg. */
static int check_config_files(struct ctl *c, const struct mthp_config_files *f, struct mthp_config *cfg,
                              bool *first_file) {
        static char err[65536];
        err[0] = 0;
        bool valid = mthp_config_load_files(f, cfg, err, sizeof(err)) == 0;
        if (!valid && !c->json)
                print_errors(err);
        int bad = 0;
        for (size_t i = 0; i < f->n; i++) {
                bool ok = valid || !errors_about(err, f->path[i]);
                bad += !ok;
                print_check(c, f->path[i], false, ok, err, first_file);
        }
        /* what is about no one file (LowerFaultRate= of the merged files) */
        if (!valid && !bad) {
                if (c->json)
                        print_check(c, f->n ? f->path[0] : "mthpd.conf", false, false, err, first_file);
                bad = 1;
        }
        if (!f->n && !c->json)
                printf("no mthpd.conf or drop-in: built-in defaults\n");
        return bad;
}

/* No FILE: the files mthpd reads by default and the policy directory they
 * name, each listed in the order read. */
static int check_default(struct ctl *c, bool *first_file) {
        struct mthp_config_files f;
        struct mthp_config cfg;
        static char err[65536];
        mthp_config_defaults(&cfg);
        int r = mthp_config_files_find(mthp_config_default_dirs, &f, err, sizeof(err));
        if (r < 0) {
                if (c->json)
                        print_check(c, "mthpd.conf.d", true, false, err, first_file);
                else
                        print_errors(err);
                return 1;
        }
        int bad = check_config_files(c, &f, &cfg, first_file);
        mthp_config_files_free(&f);
        if (bad)
                return bad; /* the policy directory the files name is not known */
        struct mthp_policy_set *set = NULL;
        err[0] = 0;
        r = mthp_policy_load_dir(cfg.policy_dir, true, &set, err, sizeof(err));
        if (r == 0) {
                for (unsigned j = 0; j < set->n; j++)
                        print_check(c, set->p[j].file, false, true, "", first_file);
                mthp_policy_set_free(set);
                return 0;
        }
        if (c->json)
                print_check(c, cfg.policy_dir, true, false, err, first_file);
        else
                print_errors(err);
        return 1;
}

int cmd_check(struct ctl *c, int argc, char **argv) {
        int bad = 0;
        bool first_file = true;
        const char **policies = NULL;
        size_t n_policies = 0;
        if (c->json)
                printf("{\"files\":[");
        if (argc == 0)
                bad += check_default(c, &first_file);
        for (int i = 0; i < argc; i++) {
                bool policy = c->type ? strcmp(c->type, "policy") == 0 : is_policy_file(argv[i]);
                if (is_dir(argv[i]) && (!c->type || policy)) {
                        /* a policy directory: every *.policy in it, as mthpd loads them */
                        struct mthp_policy_set *set = NULL;
                        static char err[65536];
                        err[0] = 0;
                        int r = mthp_policy_load_dir(argv[i], true, &set, err, sizeof(err));
                        bad += r < 0;
                        if (r == 0) {
                                for (unsigned j = 0; j < set->n; j++)
                                        print_check(c, set->p[j].file, false, true, "", &first_file);
                                if (!set->n && !c->json)
                                        printf("%s: ok (no *.policy files)\n", argv[i]);
                                mthp_policy_set_free(set);
                        } else if (c->json)
                                print_check(c, argv[i], true, false, err, &first_file);
                        else
                                print_errors(err);
                        continue;
                }
                if (policy) {
                        policies = xrealloc(policies, (n_policies + 1) * sizeof(*policies));
                        policies[n_policies++] = argv[i];
                        continue;
                }
                /* one file alone, FILE.d/ or not: what config management validates */
                struct mthp_config cfg;
                char *one[] = { argv[i] };
                struct mthp_config_files f = { .path = one, .n = 1, .main = true };
                mthp_config_defaults(&cfg);
                bad += check_config_files(c, &f, &cfg, &first_file);
        }
        bool set_error = false;
        size_t set_errsz = 1 << 20;
        char *set_err = xrealloc(NULL, set_errsz);
        set_err[0] = 0;
        if (n_policies)
                bad += check_policy_files(c, policies, n_policies, &first_file, set_err, set_errsz, &set_error);
        /* what refuses the set but is about no one file: a line of its own */
        bool first = true;
        if (c->json)
                printf("]%s", set_error ? ",\"errors\":[" : "");
        if (set_error)
                print_errors_about(set_err, NULL, policies, n_policies, c->json, &first);
        if (c->json)
                printf("%s}\n", set_error ? "]" : "");
        bad += set_error && bad == 0;
        free(set_err);
        free(policies);
        return bad ? EXIT_FAIL : EXIT_OK;
}
