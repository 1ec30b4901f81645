/* SPDX-License-Identifier: MIT */
/* mthpctl history: the knob changes mthpd made, from the bus or the journal. */
#include "mthpctl.h"

/* Just enough JSON for journalctl -o json: one flat object per line whose
 * values are strings, numbers, null, or arrays (binary or repeated
 * fields). Only string values are kept. */
static const char *json_ws(const char *p) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
                p++;
        return p;
}

static void utf8_put(char *out, size_t size, size_t *o, unsigned cp) {
        char b[4];
        size_t n;
        if (cp < 0x80)
                b[0] = (char) cp, n = 1;
        else if (cp < 0x800)
                b[0] = (char) (0xc0 | cp >> 6), b[1] = (char) (0x80 | (cp & 0x3f)), n = 2;
        else if (cp < 0x10000)
                b[0] = (char) (0xe0 | cp >> 12), b[1] = (char) (0x80 | (cp >> 6 & 0x3f)),
                b[2] = (char) (0x80 | (cp & 0x3f)), n = 3;
        else
                b[0] = (char) (0xf0 | cp >> 18), b[1] = (char) (0x80 | (cp >> 12 & 0x3f)),
                b[2] = (char) (0x80 | (cp >> 6 & 0x3f)), b[3] = (char) (0x80 | (cp & 0x3f)), n = 4;
        if (*o + n < size) {
                memcpy(out + *o, b, n);
                *o += n;
        }
}

static int hex4(const char *p, unsigned *v) {
        *v = 0;
        for (int i = 0; i < 4; i++) {
                char ch = p[i];
                unsigned d = ch >= '0' && ch <= '9' ? (unsigned) (ch - '0')
                           : ch >= 'a' && ch <= 'f' ? (unsigned) (ch - 'a' + 10)
                           : ch >= 'A' && ch <= 'F' ? (unsigned) (ch - 'A' + 10) : 16;
                if (d > 15)
                        return -EINVAL;
                *v = *v << 4 | d;
        }
        return 0;
}

/* p at the opening quote; out may be NULL (skip). Returns past the closing
 * quote or NULL. Truncates to size. */
static const char *json_string(const char *p, char *out, size_t size) {
        size_t o = 0;
        if (*p++ != '"')
                return NULL;
        for (;;) {
                unsigned char ch = (unsigned char) *p++;
                unsigned cp;
                if (!ch)
                        return NULL;
                if (ch == '"')
                        break;
                if (ch != '\\') {
                        if (out && o + 1 < size)
                                out[o++] = (char) ch;
                        continue;
                }
                ch = (unsigned char) *p++;
                switch (ch) {
                case 'b': cp = '\b'; break;
                case 'f': cp = '\f'; break;
                case 'n': cp = '\n'; break;
                case 'r': cp = '\r'; break;
                case 't': cp = '\t'; break;
                case 'u':
                        if (hex4(p, &cp) < 0)
                                return NULL;
                        p += 4;
                        if (cp >= 0xd800 && cp < 0xdc00 && p[0] == '\\' && p[1] == 'u') {
                                unsigned lo;
                                if (hex4(p + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
                                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                                        p += 6;
                                }
                        }
                        break;
                case '"': case '\\': case '/': cp = ch; break;
                default: return NULL;
                }
                if (out)
                        utf8_put(out, size, &o, cp);
        }
        if (out && size)
                out[o < size ? o : size - 1] = 0;
        return p;
}

static const char *json_skip(const char *p) {
        p = json_ws(p);
        if (*p == '"')
                return json_string(p, NULL, 0);
        if (*p == '[' || *p == '{') {
                char close = *p == '[' ? ']' : '}';
                p = json_ws(p + 1);
                if (*p == close)
                        return p + 1;
                for (;;) {
                        if (close == '}') {
                                if (!(p = json_string(json_ws(p), NULL, 0)) || *(p = json_ws(p)) != ':')
                                        return NULL;
                                p++;
                        }
                        if (!(p = json_skip(p)))
                                return NULL;
                        p = json_ws(p);
                        if (*p == close)
                                return p + 1;
                        if (*p++ != ',')
                                return NULL;
                }
        }
        const char *start = p; /* number, true, false, null */
        while (*p && strchr("+-.0123456789eEtruefalsn", *p))
                p++;
        return p == start ? NULL : p;
}

/* One journal entry of a knob change; 0, or -EINVAL if it is not one. */
static int journal_change_parse(const char *line, struct mthp_change *c, bool *dry_run) {
        char key[64], ts[32] = "", dry[8] = "0";
        const char *p = json_ws(line);
        memset(c, 0, sizeof(*c));
        if (*p++ != '{')
                return -EINVAL;
        for (p = json_ws(p); *p != '}';) {
                if (!(p = json_string(p, key, sizeof(key))) || *(p = json_ws(p)) != ':')
                        return -EINVAL;
                p = json_ws(p + 1);
                struct {
                        const char *key;
                        char *buf;
                        size_t size;
                } fields[] = {
                        { "__REALTIME_TIMESTAMP", ts, sizeof(ts) },     { "MTHP_KNOB", c->id, sizeof(c->id) },
                        { "MTHP_OLD", c->old, sizeof(c->old) },         { "MTHP_NEW", c->new, sizeof(c->new) },
                        { "MTHP_REASON", c->reason, sizeof(c->reason) }, { "MTHP_DRY_RUN", dry, sizeof(dry) },
                };
                char *buf = NULL;
                size_t size = 0;
                for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
                        if (strcmp(key, fields[i].key) == 0)
                                buf = fields[i].buf, size = fields[i].size;
                p = buf && *p == '"' ? json_string(p, buf, size) : json_skip(p);
                if (!p)
                        return -EINVAL;
                p = json_ws(p);
                if (*p == ',')
                        p = json_ws(p + 1);
                else if (*p != '}')
                        return -EINVAL;
        }
        char *end;
        c->realtime_usec = strtoull(ts, &end, 10);
        if (!c->id[0] || !ts[0] || *end)
                return -EINVAL;
        *dry_run = strcmp(dry, "1") == 0;
        return 0;
}

struct history {
        const char *source;                   /* "bus" | "journal" */
        unsigned n, cap;
        struct mthp_change *c;
        bool *dry_run;                        /* journal only */
};

static void history_add(struct history *h, const struct mthp_change *c, bool dry_run) {
        if (h->n == h->cap) {
                h->cap = h->cap ? 2 * h->cap : 64;
                h->c = xrealloc(h->c, h->cap * sizeof(*h->c));
                h->dry_run = xrealloc(h->dry_run, h->cap * sizeof(*h->dry_run));
        }
        h->c[h->n] = *c;
        h->dry_run[h->n++] = dry_run;
}

/* Without the daemon: its change entries in the journal (MESSAGE_ID). */
static int history_from_journal(const struct ctl *c, struct history *h) {
        char since[64] = "", lines[32] = "";
        char *args[12];
        int n = 0, pfd[2];

        args[n++] = (char *) "journalctl";
        args[n++] = (char *) "-o";
        args[n++] = (char *) "json";
        args[n++] = (char *) "-q";
        args[n++] = (char *) "--no-pager";
        if (c->since_set) {
                snprintf(since, sizeof(since), "--since=@%llu", (unsigned long long) (c->since_usec / 1000000));
                args[n++] = since;
        }
        if (c->lines) {
                snprintf(lines, sizeof(lines), "--lines=%lu", c->lines);
                args[n++] = lines;
        }
        args[n++] = (char *) "MESSAGE_ID=" MTHP_MESSAGE_CHANGE;
        args[n] = NULL;

        if (pipe2(pfd, O_CLOEXEC) < 0)
                return -errno;
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
                close(pfd[0]);
                close(pfd[1]);
                return -errno;
        }
        if (pid == 0) {
                dup2(pfd[1], STDOUT_FILENO);
                execvp(args[0], args);
                _exit(127);
        }
        close(pfd[1]);
        FILE *f = fdopen(pfd[0], "re");
        if (!f) {
                close(pfd[0]);
                waitpid(pid, NULL, 0);
                return -ENOMEM;
        }
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, f) >= 0) {
                struct mthp_change ch;
                bool dry;
                if (journal_change_parse(line, &ch, &dry) == 0 && ch.realtime_usec >= c->since_usec)
                        history_add(h, &ch, dry);
        }
        free(line);
        fclose(f);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
                fprintf(stderr, "mthpctl: history: mthpd is not on the bus and journalctl is not available\n");
                return -ENOENT;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "mthpctl: history: mthpd is not on the bus and journalctl failed (exit status %d)\n",
                        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
                return -EIO;
        }
        return 0;
}

int cmd_history(struct ctl *c, int argc, char **argv) {
        struct history h = { 0 };
        int r;
        (void) argc;
        (void) argv;

        struct ctl_bus *bus = bus_open_for_read(false);
        if (bus) {
                /* all the daemon remembers when filtering by time, else the last N */
                uint32_t max = c->lines && !c->since_set ? (uint32_t) c->lines : UINT32_MAX;
                struct mthp_change *ch;
                unsigned n;
                struct ctl_bus_error e;
                r = ctl_bus_history(bus, max, &ch, &n, &e);
                ctl_bus_free(bus);
                if (r >= 0) {
                        h.source = "bus";
                        for (unsigned i = 0; i < n; i++)
                                if (ch[i].realtime_usec >= c->since_usec)
                                        history_add(&h, &ch[i], false);
                }
                free(ch);
                if (r < 0 && r != -ESRCH) {
                        r = bus_fail(c, r, &e);
                        goto out;
                }
        }
        if (!h.source) {
                h.source = "journal";
                if (history_from_journal(c, &h) < 0) {
                        r = EXIT_FAIL;
                        goto out;
                }
        }
        /* the last N, oldest first */
        unsigned from = c->lines && h.n > c->lines ? h.n - (unsigned) c->lines : 0;
        bool journal = strcmp(h.source, "journal") == 0;
        char since[64] = "";
        if (c->since_set)
                mthp_timestamp_format(c->since_usec, false, since, sizeof(since));
        if (c->json) {
                printf("{\"source\":\"%s\",\"changes\":[", h.source);
                for (unsigned i = from; i < h.n; i++) {
                        char t[64];
                        mthp_timestamp_format(h.c[i].realtime_usec, true, t, sizeof(t));
                        printf("%s{\"time_usec\":%llu,\"time\":\"%s\",\"id\":", i > from ? "," : "",
                               (unsigned long long) h.c[i].realtime_usec, t);
                        json_str(h.c[i].id);
                        printf(",\"old\":");
                        json_str(h.c[i].old);
                        printf(",\"new\":");
                        json_str(h.c[i].new);
                        printf(",\"reason\":");
                        json_str(h.c[i].reason);
                        if (journal)
                                printf(",\"dry_run\":%s", h.dry_run[i] ? "true" : "false");
                        printf("}");
                }
                printf("]}\n");
        } else if (from == h.n) {
                if (journal)
                        printf("mthpd is not on the bus, and the journal holds no knob changes by mthpd%s%s\n",
                               since[0] ? " since " : "", since);
                else
                        printf("no knob changes%s%s (mthpd remembers its last %u)\n", since[0] ? " since " : "", since,
                               MTHP_HISTORY_MAX);
        } else {
                struct table t;
                if (journal)
                        printf("mthpd is not on the bus; its knob changes from the journal:\n");
                table_init(&t, "TIME", "KNOB", "OLD", "NEW", "REASON", NULL);
                for (unsigned i = from; i < h.n; i++) {
                        char tm[64];
                        mthp_timestamp_format(h.c[i].realtime_usec, false, tm, sizeof(tm));
                        table_cell(&t, "%s", tm);
                        table_cell(&t, "%s", h.c[i].id);
                        table_cell(&t, "%s", h.c[i].old);
                        table_cell(&t, "%s", h.c[i].new);
                        table_cell(&t, "%s%s", journal && h.dry_run[i] ? "(dry run, not written) " : "",
                                   h.c[i].reason);
                }
                table_print(&t, stdout);
                table_free(&t);
        }
        r = EXIT_OK;
out:
        free(h.c);
        free(h.dry_run);
        return r;
}
