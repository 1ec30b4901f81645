/* SPDX-License-Identifier: MIT */
/* mthpctl top: the live view. */
#include "mthpctl.h"

static volatile sig_atomic_t top_quit, top_resized, top_suspend;

static void top_signal(int sig) {
        if (sig == SIGWINCH)
                top_resized = 1;
        else if (sig == SIGTSTP)
                top_suspend = 1;
        else
                top_quit = 1;
}

struct top_term {
        bool tty_out, raw;
        struct termios saved;
};

static void top_term_setup(struct top_term *t) {
        t->tty_out = isatty(STDOUT_FILENO);
        if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &t->saved) == 0) {
                /* keys without Enter, no echo; ISIG stays: Ctrl-C is SIGINT */
                struct termios raw = t->saved;
                raw.c_lflag &= ~(tcflag_t) (ICANON | ECHO);
                raw.c_cc[VMIN] = 1;
                raw.c_cc[VTIME] = 0;
                t->raw = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
        }
        if (t->tty_out)
                fputs("\033[?1049h\033[?25l", stdout); /* alternate screen, hide the cursor */
}

static void top_term_restore(const struct top_term *t) {
        if (t->tty_out)
                fputs("\033[?25h\033[?1049l", stdout);
        fflush(stdout);
        if (t->raw)
                tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
}

#define TOP_CGROUPS 5

static void top_render(FILE *f, const struct ctl *c, const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                       const struct daemon_view *v, const struct knob_owners *o, const struct ctl_bus_cgroup *cg,
                       unsigned n_cg) {
        char now[32], interval[32];
        mthp_timestamp_format(mthp_now_usec(CLOCK_REALTIME), false, now, sizeof(now));
        snprintf(interval, sizeof(interval), "%.1fs", (double) c->interval_usec / 1e6);
        fprintf(f, "mthpctl top - %s, every %s - q quits\n", now, interval);
        print_daemon_line(f, v);
        fputc('\n', f);
        fprintf(f, "demand %.0f pages/s", v->on_bus ? v->fault_pages_rate : snap->fault_pages_rate);
        if (snap->psi.present)
                fprintf(f, " | PSI memory some %.2f%% full %.2f%%", snap->psi.some_avg10, snap->psi.full_avg10);
        else
                fprintf(f, " | PSI absent");
        fprintf(f, " | MemAvailable %llu MiB\n\n", (unsigned long long) snap->mem.available_kb / 1024);
        print_knobs(f, caps, snap, o);
        fputc('\n', f);
        if (n_cg) {
                struct table t;
                table_init(&t, "CGROUP", "POLICY", ">PRIO", ">FAULTS/S", ">MEMORY", ">PSI", "DENSE", NULL);
                for (unsigned i = 0; i < n_cg && i < TOP_CGROUPS; i++) {
                        const struct ctl_bus_cgroup *x = &cg[i];
                        char mem[16], da[16], ds[16];
                        fmt_kb(x->usage_kb, mem, sizeof(mem));
                        fmt_dense(x->dense_kb[0], da, sizeof(da));
                        fmt_dense(x->dense_kb[1], ds, sizeof(ds));
                        table_cell(&t, "%s", x->path);
                        table_cell(&t, "%s (anon %s, shmem %s)", x->policy, x->anon, x->shmem);
                        table_cell(&t, "%u", x->priority);
                        table_cell(&t, "%.0f", x->fault_rate);
                        table_cell(&t, "%s", mem);
                        if (x->psi_some >= 0)
                                table_cell(&t, "%.1f%%", x->psi_some);
                        else
                                table_cell(&t, "-");
                        table_cell(&t, "anon %s, shmem %s", da, ds);
                }
                table_print(&t, f);
                if (n_cg > TOP_CGROUPS)
                        fprintf(f, "... %u more managed cgroups ('mthpctl cgroups')\n", n_cg - TOP_CGROUPS);
                table_free(&t);
                fputc('\n', f);
        }
        if (!v->running) {
                fprintf(f, "mthpd is not running: no decisions to explain\n");
                return;
        }
        if (!v->n_reasons) {
                fprintf(f, "mthpd manages no knob under its configuration\n");
                return;
        }
        struct table t;
        table_init(&t, "KNOB", "DECISION", "REASON", NULL);
        /* knobs mthpd sets first: on a short screen they are what is cut last */
        for (int pass = 0; pass < 2; pass++)
                for (unsigned i = 0; i < v->n_reasons; i++) {
                        if ((strcmp(v->reason[i].decision, "original") == 0) != (pass == 1))
                                continue;
                        table_cell(&t, "%s", v->reason[i].id);
                        table_cell(&t, "%s", v->reason[i].decision);
                        table_text_cell(&t, "", v->reason[i].reason);
                }
        table_print(&t, f);
        table_free(&t);
}

/* Draw a frame over the last one, cut to the terminal; on a pipe, print it. */
static void top_emit(const char *frame, bool tty) {
        if (!tty) {
                fputs(frame, stdout);
                fputc('\n', stdout);
                fflush(stdout);
                return;
        }
        struct winsize ws;
        unsigned rows = 24, cols = 80;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
                rows = ws.ws_row, cols = ws.ws_col;
        fputs("\033[H", stdout);
        const char *p = frame;
        for (unsigned line = 0; *p && line < rows; line++) {
                size_t l = strcspn(p, "\n"), cut = l;
                if (cut > cols) {
                        cut = cols;
                        while (cut && ((unsigned char) p[cut] & 0xc0) == 0x80) /* not inside a UTF-8 character */
                                cut--;
                }
                if (line)
                        fputc('\n', stdout); /* never after the last row: that would scroll */
                fwrite(p, 1, cut, stdout);
                fputs("\033[K", stdout);
                p += l + (p[l] == '\n');
        }
        fputs("\033[J", stdout);
        fflush(stdout);
}

/* Wait until deadline (CLOCK_MONOTONIC µs) for 'q', a signal or a resize.
 * Returns true to quit. */
static bool top_wait(uint64_t deadline, bool *stdin_open, const char *frame, struct top_term *term) {
        for (;;) {
                if (top_quit)
                        return true;
                if (top_suspend) {
                        /* Ctrl-Z: give the shell its terminal back while stopped */
                        top_suspend = 0;
                        top_term_restore(term);
                        raise(SIGSTOP);
                        top_term_setup(term);
                        top_resized = 1;
                }
                if (top_resized) {
                        top_resized = 0;
                        top_emit(frame, term->tty_out);
                }
                uint64_t now = mthp_now_usec(CLOCK_MONOTONIC);
                if (now >= deadline)
                        return false;
                struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
                int timeout = (int) ((deadline - now + 999) / 1000);
                int r = poll(&pfd, *stdin_open ? 1 : 0, timeout);
                if (r < 0 && errno != EINTR)
                        return true;
                if (r > 0) {
                        char buf[64];
                        ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
                        if (n <= 0)
                                *stdin_open = false; /* EOF (not a terminal): only signals stop us */
                        else if (memchr(buf, 'q', (size_t) n) || memchr(buf, 'Q', (size_t) n))
                                return true;
                }
        }
}

int cmd_top(struct ctl *c, int argc, char **argv) {
        static struct mthp_journal j;
        static struct knob_owners o;
        struct top_term term = { 0 };
        struct ctl_bus *bus = NULL;
        bool stdin_open = true;
        int ret = EXIT_OK;
        (void) argc;
        (void) argv;

        struct host_view *hv = host_view_open(c);
        if (!hv)
                return EXIT_FAIL;
        struct sigaction sa = { .sa_handler = top_signal }; /* no SA_RESTART: poll returns */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        sigaction(SIGWINCH, &sa, NULL);
        sigaction(SIGTSTP, &sa, NULL);
        if (!c->json)
                top_term_setup(&term);

        struct daemon_view *v = xrealloc(NULL, sizeof(*v));
        char *frame = NULL;
        for (unsigned long n = 1; !top_quit; n++) {
                uint64_t deadline = mthp_now_usec(CLOCK_MONOTONIC) + c->interval_usec;
                if (!bus)
                        bus = bus_open_for_read(true); /* mthpd may have started */
                daemon_look(c, bus, LOOK_KNOBS | LOOK_REASONS | LOOK_QUIET, v);
                if (bus && !v->on_bus) {
                        ctl_bus_free(bus); /* it went away; look again next time */
                        bus = NULL;
                }
                bool journal_ok = load_journal(c, true, &j);
                knob_owners_fill(&o, &hv->caps, &hv->snap, &j, v);
                struct ctl_bus_cgroup *cg = NULL;
                unsigned n_cg = 0;
                struct ctl_bus_error e;
                if (bus && v->on_bus && ctl_bus_list_cgroups(bus, &cg, &n_cg, &e) < 0)
                        n_cg = 0;

                if (c->json) {
                        /* one JSON object per frame and line (NDJSON) */
                        printf("{\"time_usec\":%llu,", (unsigned long long) mthp_now_usec(CLOCK_REALTIME));
                        json_status_fields(c, hv, v, &o, &j, journal_ok);
                        printf(",\"cgroups\":");
                        json_cgroups(cg, n_cg);
                        printf(",\"decisions\":[");
                        for (unsigned i = 0; v->running && i < v->n_reasons; i++) {
                                printf("%s{\"id\":", i ? "," : "");
                                json_str(v->reason[i].id);
                                printf(",\"decision\":");
                                json_str(v->reason[i].decision);
                                printf(",\"reason\":");
                                json_str(v->reason[i].reason);
                                printf("}");
                        }
                        printf("]}\n");
                        fflush(stdout);
                        free(cg);
                } else {
                        size_t len;
                        free(frame);
                        frame = NULL;
                        FILE *f = open_memstream(&frame, &len);
                        if (!f) {
                                free(cg);
                                ret = EXIT_FAIL;
                                break;
                        }
                        top_render(f, c, &hv->caps, &hv->snap, v, &o, cg, n_cg);
                        fclose(f);
                        free(cg);
                        top_emit(frame, term.tty_out);
                }
                if (c->iterations && n >= c->iterations)
                        break;
                if (top_wait(deadline, &stdin_open, frame ? frame : "", &term))
                        break;
                mthp_sampler_take(hv->s, mthp_now_usec(CLOCK_MONOTONIC), &hv->snap);
        }
        top_term_restore(&term);
        free(frame);
        free(v);
        ctl_bus_free(bus);
        host_view_close(hv);
        return ret;
}
