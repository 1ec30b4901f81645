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

int cmd_check(struct ctl *c, int argc, char **argv) {
        int bad = 0;
        bool first_file = true;
        const char **policies = NULL;
        size_t n_policies = 0;
        if (c->json)
                printf("{\"files\":[");
        for (int i = 0; i < argc; i++) {
                if (is_dir(argv[i])) {
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
                if (is_policy_file(argv[i])) {
                        policies = xrealloc(policies, (n_policies + 1) * sizeof(*policies));
                        policies[n_policies++] = argv[i];
                        continue;
                }
                struct mthp_config cfg;
                char err[8192] = "";
                mthp_config_defaults(&cfg);
                bool valid = mthp_config_load(argv[i], &cfg, err, sizeof(err)) == 0;
                bad += !valid;
                if (!valid && !c->json)
                        print_errors(err);
                print_check(c, argv[i], false, valid, err, &first_file);
        }
        if (n_policies) {
                /* together, so that a pattern in two files is caught */
                struct mthp_policy_set *set = NULL;
                static char err[65536];
                err[0] = 0;
                int r = mthp_policy_load_files(policies, n_policies, true, &set, err, sizeof(err));
                if (r < 0 && !c->json)
                        print_errors(err);
                for (size_t j = 0; j < n_policies; j++) {
                        bool valid = r == 0;
                        if (!valid) {
                                /* only the files named in the errors are invalid */
                                valid = true;
                                for (const char *l = err; *l && valid;) {
                                        size_t len = strcspn(l, "\n");
                                        if (mthp_error_line_is_about(l, len, policies[j], false))
                                                valid = false;
                                        l += len + (l[len] == '\n');
                                }
                        }
                        bad += !valid;
                        print_check(c, policies[j], false, valid, err, &first_file);
                }
                if (r < 0 && bad == 0)
                        bad = 1; /* e.g. too many files */
                mthp_policy_set_free(set);
                free(policies);
        }
        if (c->json)
                printf("]}\n");
        return bad ? EXIT_FAIL : EXIT_OK;
}
