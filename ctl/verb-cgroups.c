/* SPDX-License-Identifier: MIT */
/* mthpctl cgroups: the cgroups policy files manage. */
#include "mthpctl.h"
#include "mthp/util.h"

static int cmp_cgroup_rate(const void *a, const void *b) {
        const struct ctl_bus_cgroup *x = a, *y = b;
        return x->fault_rate < y->fault_rate ? 1 : x->fault_rate > y->fault_rate ? -1 : strcmp(x->path, y->path);
}

static const char *policy_dir_of(const struct ctl *c) {
        return c->policy_dir ? c->policy_dir : MTHP_SYSCONFDIR "/policy.d";
}

/* As mthpd decides it: Unit= stays out of cgroups delegated to users
 * unless the policy says Delegated=yes. */
static bool managed_by(const char *path, void *user) {
        const struct mthp_policy_set *set = user;
        for (unsigned i = 0; i < set->n; i++)
                if (mthp_policy_set_matches(set, i, path))
                        return true;
        return false;
}

struct owned_ctx {
        const struct mthp_host *h;
        const struct mthp_caps *caps;
};

static bool cgroup_user_owned(void *user, const char *cgroup) {
        const struct owned_ctx *o = user;
        return mthp_cgroup_owned_by_user(o->h, o->caps, cgroup);
}

/* Without mthpd: the policy files and the cgroups they match, measured over
 * --sample (no density: that is the daemon's memory). */
static int cgroups_from_host(struct ctl *c, struct ctl_bus_cgroup **ret, unsigned *n) {
        static char err[65536];
        struct mthp_policy_set *set = NULL;
        *ret = NULL;
        *n = 0;
        if (mthp_policy_load_dir(policy_dir_of(c), true, &set, err, sizeof(err)) < 0) {
                print_errors(err);
                fprintf(stderr, "mthpctl: cgroups: the policy files in %s are invalid\n", policy_dir_of(c));
                return -EINVAL;
        }
        struct mthp_host *h = NULL;
        struct mthp_caps *caps = xrealloc(NULL, sizeof(*caps));
        struct mthp_cgmon *m = NULL;
        int r = mthp_host_open(c->root, &h);
        if (r >= 0)
                r = mthp_probe(h, caps);
        if (r >= 0)
                r = mthp_cgmon_new(h, caps, &m);
        if (r < 0) {
                fprintf(stderr, "mthpctl: cgroups: cannot read the cgroups under %s: %s\n", c->root, strerror(-r));
                goto out;
        }
        struct owned_ctx owned = { h, caps };
        set->user_owned = cgroup_user_owned;
        set->user_owned_data = &owned;
        mthp_cgmon_set_match(m, managed_by, set);
        struct mthp_cgroup_view *v = xrealloc(NULL, MTHP_SNAP_CGROUPS * sizeof(*v));
        unsigned nv = 0;
        uint64_t t0 = mthp_now_usec(CLOCK_MONOTONIC);
        r = mthp_cgmon_tick(m, t0, v, MTHP_SNAP_CGROUPS, &nv);
        if (r >= 0 && c->sample_usec) {
                usleep((useconds_t) c->sample_usec);
                r = mthp_cgmon_tick(m, mthp_now_usec(CLOCK_MONOTONIC), v, MTHP_SNAP_CGROUPS, &nv);
        }
        if (r >= 0) {
                *ret = xrealloc(NULL, (nv ? nv : 1) * sizeof(**ret));
                for (unsigned i = 0; i < nv; i++) {
                        struct ctl_bus_cgroup *o = &(*ret)[i];
                        int pi = mthp_policy_match(set, v[i].path, NULL, 0);
                        const struct mthp_policy *pol = pi >= 0 ? &set->p[pi] : NULL;
                        memset(o, 0, sizeof(*o));
                        mthp_strcpy(o->path, sizeof(o->path), v[i].path);
                        mthp_strcpy(o->policy, sizeof(o->policy), pol ? pol->name : "");
                        mthp_strcpy(o->anon, sizeof(o->anon), mthp_policy_mode_name(pol ? pol->mode[MTHP_ANON] : 0));
                        mthp_strcpy(o->shmem, sizeof(o->shmem), mthp_policy_mode_name(pol ? pol->mode[MTHP_SHMEM] : 0));
                        o->priority = pol ? pol->priority : 50;
                        o->collapse = pol && pol->collapse;
                        o->fault_rate = c->sample_usec && !v[i].new_cgroup ? v[i].fault_rate : -1;
                        o->anon_kb = v[i].anon_kb;
                        o->shmem_kb = v[i].shmem_kb;
                        o->usage_kb = v[i].usage_kb;
                        o->limit_kb = v[i].limit_kb;
                        o->psi_some = v[i].psi_present ? v[i].psi_some_avg10 : -1;
                        o->dense_kb[0] = o->dense_kb[1] = -1;
                }
                *n = nv;
        } else
                fprintf(stderr, "mthpctl: cgroups: sampling failed: %s\n", strerror(-r));
        free(v);
out:
        mthp_cgmon_free(m);
        mthp_host_free(h);
        free(caps);
        mthp_policy_set_free(set);
        return r < 0 ? r : 0;
}

void fmt_kb(uint64_t kb, char *buf, size_t n) {
        if (kb >= 10ULL << 20)
                snprintf(buf, n, "%.1fG", (double) kb / (1 << 20));
        else if (kb >= 10ULL << 10)
                snprintf(buf, n, "%lluM", (unsigned long long) kb >> 10);
        else
                snprintf(buf, n, "%lluK", (unsigned long long) kb);
}

void fmt_dense(int kb, char *buf, size_t n) {
        if (kb < 0)
                snprintf(buf, n, "-");
        else if (kb == 0)
                snprintf(buf, n, "4K");
        else
                mthp_format_size((unsigned) kb, buf, n);
}

/* A JSON array of cgroups (cgroups --json, top --json). */
void json_cgroups(const struct ctl_bus_cgroup *cg, unsigned n) {
        printf("[");
        for (unsigned i = 0; i < n; i++) {
                const struct ctl_bus_cgroup *x = &cg[i];
                printf("%s{\"path\":", i ? "," : "");
                json_str(x->path);
                printf(",\"policy\":");
                json_str(x->policy);
                printf(",\"anon\":");
                json_str(x->anon);
                printf(",\"shmem\":");
                json_str(x->shmem);
                printf(",\"priority\":%u,\"collapse\":%s,\"fault_rate\":", x->priority,
                       x->collapse ? "true" : "false");
                if (x->fault_rate >= 0)
                        printf("%.1f", x->fault_rate);
                else
                        printf("null");
                printf(",\"anon_kb\":%llu,\"shmem_kb\":%llu,\"usage_kb\":%llu,\"limit_kb\":",
                       (unsigned long long) x->anon_kb, (unsigned long long) x->shmem_kb,
                       (unsigned long long) x->usage_kb);
                json_u64_or_null(x->limit_kb != 0, x->limit_kb);
                printf(",\"psi_some_avg10\":");
                if (x->psi_some >= 0)
                        printf("%.2f", x->psi_some);
                else
                        printf("null");
                printf(",\"dense_kb\":{\"anon\":");
                if (x->dense_kb[0] >= 0)
                        printf("%d", x->dense_kb[0]);
                else
                        printf("null");
                printf(",\"shmem\":");
                if (x->dense_kb[1] >= 0)
                        printf("%d", x->dense_kb[1]);
                else
                        printf("null");
                printf("}}");
        }
        printf("]");
}

int cmd_cgroups(struct ctl *c, int argc, char **argv) {
        (void) argc;
        (void) argv;
        struct ctl_bus_cgroup *cg = NULL;
        unsigned n = 0;
        bool from_daemon = false;
        struct ctl_bus *bus = bus_open_for_read(false);
        if (bus) {
                struct ctl_bus_error e;
                int r = ctl_bus_list_cgroups(bus, &cg, &n, &e);
                if (r < 0 && r != -ESRCH) {
                        ctl_bus_free(bus);
                        return bus_fail(c, r, &e);
                }
                from_daemon = r >= 0;
        }
        ctl_bus_free(bus);
        if (!from_daemon && cgroups_from_host(c, &cg, &n) < 0)
                return EXIT_FAIL;
        if (n > 1)  /* the daemon's empty list is NULL: qsort(NULL, 0, ...) is undefined */
                qsort(cg, n, sizeof(*cg), cmp_cgroup_rate);
        if (c->json) {
                printf("{\"source\":\"%s\",\"cgroups\":", from_daemon ? "mthpd" : "host");
                json_cgroups(cg, n);
                printf("}\n");
                free(cg);
                return EXIT_OK;
        }
        if (!n) {
                printf("no managed cgroups: %s\n", from_daemon ? "no policy file matches a cgroup that exists"
                                                               : "no policy file in the policy directory matches a "
                                                                 "cgroup that exists");
                free(cg);
                return EXIT_OK;
        }
        struct table t;
        table_init(&t, "CGROUP", "POLICY", "ANON", "SHMEM", ">PRIO", ">FAULTS/S", ">MEMORY", ">LIMIT", ">PSI",
                   "DENSE", NULL);
        for (unsigned i = 0; i < n; i++) {
                const struct ctl_bus_cgroup *x = &cg[i];
                char mem[16], lim[16], da[16], ds[16];
                fmt_kb(x->usage_kb, mem, sizeof(mem));
                if (x->limit_kb)
                        fmt_kb(x->limit_kb, lim, sizeof(lim));
                else
                        snprintf(lim, sizeof(lim), "-");
                fmt_dense(x->dense_kb[0], da, sizeof(da));
                fmt_dense(x->dense_kb[1], ds, sizeof(ds));
                table_cell(&t, "%s", x->path);
                table_cell(&t, "%s%s", x->policy, x->collapse ? " (collapse)" : "");
                table_cell(&t, "%s", x->anon);
                table_cell(&t, "%s", x->shmem);
                table_cell(&t, "%u", x->priority);
                if (x->fault_rate >= 0)
                        table_cell(&t, "%.0f", x->fault_rate);
                else
                        table_cell(&t, "-");
                table_cell(&t, "%s", mem);
                table_cell(&t, "%s", lim);
                if (x->psi_some >= 0)
                        table_cell(&t, "%.1f%%", x->psi_some);
                else
                        table_cell(&t, "-");
                table_cell(&t, "anon %s, shmem %s", da, ds);
        }
        table_print(&t, stdout);
        table_free(&t);
        if (!from_daemon)
                printf("(mthpd is not running: rates over %.1fs; density is known only to mthpd)\n",
                       (double) c->sample_usec / 1e6);
        free(cg);
        return EXIT_OK;
}
