/* SPDX-License-Identifier: MIT */
/* mthpctl pin, unpin, resume, reload, mode, restore: changing things. */
#include "mthpctl.h"

int cmd_pin(struct ctl *c, int argc, char **argv) {
        const char *id = argv[0], *value = argv[1];
        uint64_t until = 0, now = mthp_now_usec(CLOCK_REALTIME);
        struct ctl_bus *bus;
        struct ctl_bus_error e;
        (void) argc;

        if (c->for_set && c->until_set) {
                fprintf(stderr, "mthpctl: pin: give --for or --until, not both\n");
                return EXIT_USAGE;
        }
        if (c->for_set)
                until = now + c->for_usec;
        else if (c->until_set) {
                if (c->until_usec <= now) {
                        fprintf(stderr, "mthpctl: pin: --until must lie in the future\n");
                        return EXIT_USAGE;
                }
                until = c->until_usec;
        }
        int r = bus_open_for_write(c, &bus);
        if (r)
                return r;
        r = ctl_bus_pin(bus, id, value, until, &e);
        ctl_bus_free(bus);
        if (r < 0)
                return bus_fail(c, r, &e);
        if (until) {
                char t[64], span[32];
                mthp_timestamp_format(until, false, t, sizeof(t));
                mthp_timespan_format(until - now, span, sizeof(span));
                printf("pinned %s to %s until %s (for %s)\n", id, value, t, span);
        } else
                printf("pinned %s to %s until 'mthpctl unpin %s'\n", id, value, id);
        return EXIT_OK;
}

typedef int (*simple_method)(struct ctl_bus *b, const char *arg, struct ctl_bus_error *e);

/* Call a method that takes a knob id (or nothing) and say what it did. */
static int call_and_say(struct ctl *c, struct ctl_bus *bus, simple_method method, const char *arg, const char *done) {
        struct ctl_bus_error e;
        int r = method(bus, arg, &e);
        ctl_bus_free(bus);
        if (r < 0)
                return bus_fail(c, r, &e);
        printf("%s\n", done);
        return EXIT_OK;
}

static int simple_call(struct ctl *c, simple_method method, const char *arg, const char *done) {
        struct ctl_bus *bus;
        int r = bus_open_for_write(c, &bus);
        return r ? r : call_and_say(c, bus, method, arg, done);
}

int cmd_unpin(struct ctl *c, int argc, char **argv) {
        char done[128];
        (void) argc;
        snprintf(done, sizeof(done), "unpinned %s: mthpd decides it again", argv[0]);
        return simple_call(c, ctl_bus_unpin, argv[0], done);
}

int cmd_resume(struct ctl *c, int argc, char **argv) {
        char done[160];
        (void) argc;
        snprintf(done, sizeof(done), "mthpd manages %s again (its current value is now the one to restore)", argv[0]);
        return simple_call(c, ctl_bus_resume, argv[0], done);
}

/* A reload's outcome, as the bus or STATE/reload gives it: ok (notes: what
 * was not applied) or failed (text: every FILE:LINE error). */
static int reload_say(bool failed, char *text) {
        char clean[4 * 4096];
        if (failed) {
                fprintf(stderr, "mthpctl: reload: mthpd rejected the configuration and keeps running the one it "
                        "had:\n");
                for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
                        fprintf(stderr, "  %s\n", mthp_escape(clean, sizeof(clean), l));
                return EXIT_FAIL;
        }
        printf("mthpd reloaded its configuration\n");
        /* what it did not apply: as warnings, so that systemctl reload shows them in the journal */
        for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
                fprintf(stderr, "mthpctl: reload: not applied: %s\n", mthp_escape(clean, sizeof(clean), l));
        return EXIT_OK;
}

/* mthpd off the bus (Bus=no, --no-bus): SIGHUP to the pid of its status
 * file, once its lock shows it runs, then its STATE/reload says how the
 * reload went. 0 with *rc set, or -ESRCH: no mthpd runs. */
static int reload_by_signal(const struct ctl *c, int *rc) {
        char why[2 * MTHP_PATH_MAX + 256];
        struct mthp_status *st = xrealloc(NULL, sizeof(*st));
        pid_t pid = mthp_status_file_read(c->state_dir, st) == 0 ? st->pid : 0;
        free(st);
        if (pid <= 0)
                return -ESRCH;
        /* a status file a crash left: only a held lock means mthpd runs */
        int dfd = mthp_safe_open_dir(c->state_dir, MTHP_SAFE_OWNER, false, why, sizeof(why)), lfd = dfd;
        if (dfd >= 0) {
                lfd = mthp_safe_open_file(dfd, c->state_dir, "lock", MTHP_SAFE_OWNER | MTHP_SAFE_NOFOLLOW, 0, why,
                                          sizeof(why));
                close(dfd);
        }
        if (lfd == -EACCES || lfd == -EPERM || geteuid() != 0) {
                if (lfd >= 0)
                        close(lfd);
                fprintf(stderr, "mthpctl: reload: permission denied: only root may reload mthpd (run as root)\n");
                *rc = EXIT_DENIED;
                return 0;
        }
        if (lfd < 0)
                return -ESRCH;
        bool runs = flock(lfd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
        close(lfd);
        if (!runs)
                return -ESRCH;
        uint64_t t0 = mthp_now_usec(CLOCK_REALTIME);
        if (kill(pid, SIGHUP) < 0) {
                fprintf(stderr, "mthpctl: reload: cannot signal mthpd (pid %d): %s\n", (int) pid, strerror(errno));
                *rc = errno == EPERM ? EXIT_DENIED : EXIT_FAIL;
                return 0;
        }
        /* a reload takes milliseconds; 10 s is a hung mthpd, which its watchdog ends */
        for (int i = 0; i < 200; i++) {
                char *text = NULL;
                size_t len = 0;
                unsigned long long usec = 0;
                char result[16] = "";
                int dfd2 = mthp_safe_open_dir(c->state_dir, MTHP_SAFE_OWNER, false, why, sizeof(why));
                int r = dfd2;
                if (dfd2 >= 0) {
                        r = mthp_safe_read_text(dfd2, c->state_dir, MTHP_RELOAD_FILE,
                                                MTHP_SAFE_OWNER | MTHP_SAFE_NOFOLLOW, MTHP_SAFE_TEXT_MAX, &text, &len,
                                                why, sizeof(why));
                        close(dfd2);
                }
                int n = 0;
                if (r >= 0 && sscanf(text, "usec=%llu\nresult=%15[a-z]\n%n", &usec, result, &n) == 2 && n > 0 &&
                    usec >= t0) {
                        char *rest = text + n;
                        *rc = reload_say(strcmp(result, "ok") != 0, rest);
                        free(text);
                        return 0;
                }
                free(text);
                usleep(50000);
        }
        fprintf(stderr, "mthpctl: reload: sent SIGHUP to mthpd (pid %d), which is not on the bus, but it did not say "
                "how the reload went within 10 s: see journalctl -u mthpd\n", (int) pid);
        *rc = EXIT_FAIL;
        return 0;
}

int cmd_reload(struct ctl *c, int argc, char **argv) {
        struct ctl_bus *bus;
        struct ctl_bus_error e;
        (void) argc;
        (void) argv;
        char notes[4096];
        int r = ctl_bus_open(&bus, &e), rc;
        if (r == -ESRCH && reload_by_signal(c, &rc) == 0)
                return rc;
        if (r < 0)
                return bus_fail(c, r, &e);
        r = ctl_bus_reload(bus, notes, sizeof(notes), &e);
        ctl_bus_free(bus);
        if (r == -EINVAL)   /* InvalidConfig carries every FILE:LINE: error, one per line */
                return reload_say(true, e.message);
        if (r < 0)
                return bus_fail(c, r, &e);
        return reload_say(false, notes);
}

int cmd_mode(struct ctl *c, int argc, char **argv) {
        if (argc == 0) {
                struct ctl_bus *bus = bus_open_for_read(false);
                struct daemon_view *v = xrealloc(NULL, sizeof(*v));
                daemon_look(c, bus, 0, v);
                ctl_bus_free(bus);
                int r = EXIT_OK;
                if (!v->running) {
                        fprintf(stderr, "mthpctl: mode: mthpd is not running\n");
                        r = EXIT_NOT_RUNNING;
                } else if (c->json) {
                        printf("{\"mode\":\"%s\",\"source\":\"%s\"}\n", v->mode, v->on_bus ? "bus" : "status-file");
                } else
                        printf("%s\n", v->mode);
                free(v);
                return r;
        }
        if (c->json) {
                fprintf(stderr, "mthpctl: mode: --json is for reading the mode\n");
                return EXIT_USAGE;
        }
        const char *mode = argv[0];
        if (strcmp(mode, "manage") != 0 && strcmp(mode, "observe") != 0) {
                fprintf(stderr, "mthpctl: mode: expected manage or observe, got '%s'\n", mode);
                return EXIT_USAGE;
        }
        return simple_call(c, ctl_bus_set_mode, mode,
                           strcmp(mode, "observe") == 0
                                   ? "mode: observe (every knob mthpd changed is back; it decides and logs only)"
                                   : "mode: manage (mthpd writes knobs)");
}

static int restore_method(struct ctl_bus *b, const char *arg, struct ctl_bus_error *e) {
        (void) arg;
        return ctl_bus_restore(b, e);
}

/* Without a daemon: put back what the restore journal holds. */
static int restore_from_journal(struct ctl *c) {
        char path[MTHP_PATH_MAX], err[1024], why[2 * MTHP_PATH_MAX + 256];
        struct mthp_journal j;
        struct mthp_host *h;
        unsigned n = 0;

        /* a path cut short names another file: "nothing to restore" would be a lie */
        int r = mthp_path_join(path, sizeof(path), c->state_dir, MTHP_JOURNAL_FILE);
        if (r < 0) {
                fprintf(stderr, "mthpctl: restore: %s/%s: longer than %d bytes; not restoring\n", c->state_dir,
                        MTHP_JOURNAL_FILE, MTHP_PATH_MAX - 1);
                return EXIT_FAIL;
        }
        r = mthp_journal_load(path, &j, err, sizeof(err));
        if (r == -ENOENT) {
                printf("nothing to restore: no journal at %s\n", path);
                return EXIT_OK;
        }
        if ((r == -EACCES || r == -EPERM) && geteuid() != 0) {
                /* the journal is root's (0600 in a root-owned directory) */
                fprintf(stderr, "mthpctl: restore: permission denied: only root may restore knobs (run as root); "
                        "%s", err[0] ? err : "\n");
                return EXIT_DENIED;
        }
        if (r < 0) {
                fprintf(stderr, "mthpctl: cannot read %s: ", path);
                print_errors(err[0] ? err : "invalid journal\n");
                return EXIT_FAIL;
        }
        /* a running mthpd holds STATE/lock and would write again: refuse.
         * The lock is opened as the journal was: in the checked state
         * directory, never through a symlink, regular files only. */
        int dfd = mthp_safe_open_dir(c->state_dir, MTHP_SAFE_OWNER, false, why, sizeof(why)), lfd = dfd;
        if (dfd >= 0) {
                lfd = mthp_safe_open_file(dfd, c->state_dir, "lock", MTHP_SAFE_OWNER | MTHP_SAFE_NOFOLLOW, 0, why,
                                          sizeof(why));
                close(dfd);
        }
        if (lfd < 0 && lfd != -ENOENT) {
                fprintf(stderr, "mthpctl: restore: %s\n", why);
                return (lfd == -EACCES || lfd == -EPERM) && geteuid() != 0 ? EXIT_DENIED : EXIT_FAIL;
        }
        if (lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
                fprintf(stderr, "mthpctl: mthpd is running (it holds %s/lock) but not on the bus; stop it first: it "
                        "restores everything itself when stopped\n", c->state_dir);
                close(lfd);
                return EXIT_FAIL;
        }
        /* the journal's paths belong to the root it was written for */
        const char *root = strcmp(c->root, "/") ? c->root : (j.root[0] ? j.root : "/");
        if ((r = mthp_host_open(root, &h)) < 0) {
                fprintf(stderr, "mthpctl: cannot open host root %s: %s\n", root, mthp_errno_words(r));
                if (lfd >= 0)
                        close(lfd);
                return EXIT_FAIL;
        }
        r = mthp_actuator_restore_file(h, path, &n);
        mthp_host_free(h);
        if (lfd >= 0)
                close(lfd);
        if (r < 0 && n == 0) {
                /* unreadable, or written for another host root: nothing applied */
                fprintf(stderr, "mthpctl: the journal %s was not applied (see above); it is kept\n", path);
                return EXIT_FAIL;
        }
        if (r < 0) {
                /* every entry was tried; the file could not be rewritten */
                fprintf(stderr, "mthpctl: restored %u knob(s), but the journal %s could not be updated (see above): "
                        "it may still list knobs already restored\n", n, path);
                return EXIT_FAIL;
        }
        if (r > 0) {
                fprintf(stderr, "mthpctl: restored %u knob(s); %d could not be restored (see above); the journal "
                        "%s keeps them%s\n", n, r, path, geteuid() != 0 ? "; only root may write the knobs (run "
                        "as root)" : "");
                return geteuid() != 0 ? EXIT_DENIED : EXIT_FAIL;
        }
        printf("restored %u knob(s)\n", n);
        return EXIT_OK;
}

int cmd_restore(struct ctl *c, int argc, char **argv) {
        struct ctl_bus *bus = NULL;
        struct ctl_bus_error e;
        (void) argc;
        (void) argv;
        int r = ctl_bus_open(&bus, &e);
        if (r == -ESRCH)
                return restore_from_journal(c);
        if (r < 0)
                return bus_fail(c, r, &e);
        return call_and_say(c, bus, restore_method, NULL,
                           "mthpd restored every knob it changed and now observes ('mthpctl mode manage' to "
                           "let it manage again)");
}
