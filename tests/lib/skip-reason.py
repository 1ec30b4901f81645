#!/usr/bin/env python3
"""Make every skipped test say why on the console of `meson test`.

Meson prints a test's output only when it fails, so a skipped test shows just
"SKIP ... exit status 77" and its reason stays in testlog.txt. This is the
exe_wrapper of the project's default test setup (tests/meson.build):

  skip-reason.py BUILDDIR CMD...
      runs the test CMD, passing its stdout and stderr through unchanged and
      its exit status back; when it exits 77 it records the test's name and
      reason (its last output line that says SKIP, else its last line) in
      BUILDDIR/meson-logs/skips/<pid of meson test>.

  skip-reason.py --summary BUILDDIR
      the test 'skips', which meson runs last (priority, not parallel) and
      verbosely: prints every skip this `meson test` recorded, with its reason,
      and fails if a test skipped without printing a reason.

`meson test --setup bare` runs without the wrapper (for --wrapper or --gdb).
"""
import json
import os
import re
import selectors
import signal
import subprocess
import sys

KEEP = 16384  # bytes of each stream kept for the reason


def skipdir(build):
    return os.path.join(build, "meson-logs", "skips")


def test_name(build, cmd):
    """The name meson gives the test running CMD in this environment."""
    try:
        with open(os.path.join(build, "meson-info", "intro-tests.json"), encoding="utf-8") as f:
            tests = json.load(f)
    except (OSError, ValueError):
        tests = []
    names = []
    for t in tests:
        if t.get("cmd") != cmd:
            continue
        if any(os.environ.get(k) != v for k, v in (t.get("env") or {}).items()):
            continue
        suite = (t.get("suite") or [""])[0].split(":")[-1]
        names.append(f"{suite} / {t['name']}" if suite else t["name"])
    return " or ".join(names) if names else " ".join(os.path.basename(c) for c in cmd[:3])


def reason(out, err):
    lines = [l.strip() for l in (out + "\n" + err).splitlines() if l.strip()]
    said = [l for l in lines if re.search(r"\bSKIP\b", l, re.IGNORECASE)]
    return (said or lines or [""])[-1]


def run(build, cmd):
    env = dict(os.environ)
    env.setdefault("MTHP_MESON_PID", str(os.getppid()))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    sel = selectors.DefaultSelector()
    tails = {}
    for src, dst in ((p.stdout, sys.stdout.buffer), (p.stderr, sys.stderr.buffer)):
        sel.register(src.fileno(), selectors.EVENT_READ, dst)
        tails[src.fileno()] = b""
    # until the test exits and its output is drained (a daemon it left behind
    # holding the pipes open does not keep us waiting: 0.2 s of quiet after exit)
    while sel.get_map():
        events = sel.select(timeout=0.2 if p.poll() is not None else 1.0)
        if not events and p.poll() is not None:
            break
        for key, _ in events:
            data = os.read(key.fd, 65536)
            if not data:
                sel.unregister(key.fd)
                continue
            key.data.write(data)
            key.data.flush()
            tails[key.fd] = (tails[key.fd] + data)[-KEEP:]
    rc = p.wait()
    if rc == 77:
        line = reason(tails[p.stdout.fileno()].decode("utf-8", "replace"),
                      tails[p.stderr.fileno()].decode("utf-8", "replace"))
        os.makedirs(skipdir(build), exist_ok=True)
        with open(os.path.join(skipdir(build), env["MTHP_MESON_PID"]), "a", encoding="utf-8") as f:
            f.write(json.dumps({"test": test_name(build, cmd), "reason": line}) + "\n")
    if rc < 0:  # killed by a signal: die of it too, so meson reports the signal
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
    return rc if rc >= 0 else 128 - rc


def summary(build):
    pid = os.environ.get("MTHP_MESON_PID")
    if not pid:
        print("skip reasons were not recorded: this run does not use the default test setup")
        return 0
    path = os.path.join(skipdir(build), pid)
    entries = []
    try:
        with open(path, encoding="utf-8") as f:
            entries = [json.loads(l) for l in f if l.strip()]
        os.unlink(path)
    except FileNotFoundError:
        pass
    # records of earlier runs that ended before their summary
    for stale in os.listdir(skipdir(build)) if os.path.isdir(skipdir(build)) else []:
        if stale.isdigit() and not os.path.exists(f"/proc/{stale}"):
            os.unlink(os.path.join(skipdir(build), stale))
    if not entries:
        print("no test skipped")
        return 0
    print(f"{len(entries)} skipped, each with the reason it printed:")
    width = max(len(e["test"]) for e in entries)
    mute = []
    for e in sorted(entries, key=lambda e: e["test"]):
        print(f"SKIP {e['test']:<{width}}  {e['reason'] or '(no reason printed)'}")
        if not e["reason"]:
            mute.append(e["test"])
    if mute:
        print("FAIL: skipped without saying why (a test that cannot do its job prints the reason): "
              + ", ".join(mute))
        return 1
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--summary":
        return summary(argv[2])
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    return run(argv[1], argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
