#!/usr/bin/env python3
"""Cut a real restore journal at every byte offset and run `mthpctl restore`
on each cut (and `mthpd --once --dry-run`, which restores first, on every
line boundary and a few offsets inside lines). None may crash, and none may
write a value the full journal does not hold for that knob: each knob file
ends up either as it was (the value mthpd wrote) or at its journaled
original. A refusal must name the journal file.

usage: cut-journal.py JOURNAL ROOT STATE ORIG_KNOBS MTHPCTL MTHPD FAKEHOST FAKESYSFS CONF
"""
import os, random, re, subprocess, sys

journal, root, state, orig_knobs, mthpctl, mthpd, fakehost, fakesysfs, conf = sys.argv[1:10]
THP = "/sys/kernel/mm/transparent_hugepage"
full = open(journal, "rb").read()

# the knobs of the journal, in its order: path -> (id, original, written)
entries, cur = {}, None
for line in full.decode().splitlines():
    if line.startswith("[knob "):
        cur = {"id": line[6:-1]}
    elif cur is not None and "=" in line:
        k, v = line.split("=", 1)
        cur[k] = v
        if k == "path":
            entries[v] = cur

def sel(text):
    m = re.search(r"\[([^]]+)\]", text)
    return m.group(1) if m else text.strip()

def knob_value(path):
    return sel(open(root + path).read())

written_state = {p: knob_value(p) for p in entries}
for p, e in entries.items():
    want = e.get("foreign_value") if e["state"] == "foreign" else e["written"]
    assert written_state[p] == want, (p, written_state[p], e)

def reset():
    for p, want in written_state.items():
        if knob_value(p) != want:
            subprocess.run([fakehost, "write", root, p, want], check=True)

def check(off, what, rc, out, err):
    if rc < 0 or rc >= 128 or "Sanitizer" in err or "runtime error" in err:
        sys.exit(f"offset {off}: {what} crashed (rc {rc}): {err}")
    restored = 0
    for p, e in entries.items():
        now = knob_value(p)
        if now == written_state[p]:
            continue
        if e["state"] == "foreign":
            sys.exit(f"offset {off}: {what} changed {e['id']}, which another writer owns, to {now!r}\n{err}")
        if now != e["original"]:
            sys.exit(f"offset {off}: {what} wrote {now!r} to {e['id']}: the journal holds "
                     f"original={e['original']!r}, written={e['written']!r}\n{err}")
        restored += 1
    if rc != 0 and journal_path not in err + out:
        sys.exit(f"offset {off}: {what} failed (rc {rc}) without naming {journal_path}: {err}")
    return restored

journal_path = os.path.join(state, "restore.journal")
env = dict(os.environ, LD_PRELOAD=fakesysfs)
outcomes = {}
line_ends = {i + 1 for i, b in enumerate(full) if b == 0x0A}
rng = random.Random(7)
daemon_offsets = sorted(line_ends | {0} | set(rng.sample(range(len(full)), 12)))
for off in range(len(full) + 1):
    for what in ("mthpctl", "mthpd") if off in daemon_offsets else ("mthpctl",):
        reset()
        with open(journal_path, "wb") as f:
            f.write(full[:off])
        if what == "mthpctl":
            cmd = [mthpctl, "--root", root, "--state-dir", state, "restore"]
        else:
            cmd = [mthpd, "--root", root, "--state-dir", state, "-c", conf, "--no-bus", "--once", "--dry-run"]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
        n = check(off, what, p.returncode, p.stdout, p.stderr)
        managed = sum(e["state"] == "managed" for e in entries.values())
        key = (what, "ok" if p.returncode == 0 else "refused", "all" if n == managed else
               "none" if n == 0 else "some")
        outcomes[key] = outcomes.get(key, 0) + 1
        if off == len(full) and (p.returncode != 0 or n != managed):
            sys.exit(f"the whole journal: {what} restored {n} of {managed} (rc {p.returncode}): {p.stderr}")
        # a cut inside a line (or an empty file) is refused whole, naming the line
        if off not in line_ends and (p.returncode == 0 or n != 0 or
                                     not re.search(re.escape(journal_path) + r"(:\d+)?: ", p.stderr)):
            sys.exit(f"offset {off}: cut inside a line: {what} exit {p.returncode}, restored {n}; it must "
                     f"refuse the whole journal naming file and line: {p.stderr}")
reset()
try:
    os.unlink(journal_path)
except FileNotFoundError:
    pass
for k in sorted(outcomes):
    print(f"  {k[0]:8} exit {k[1]:8} restored {k[2]:5}: {outcomes[k]} cuts")
print(f"cut-journal: {len(full) + 1} offsets of a {len(full)}-byte journal, {len(entries)} knobs "
      f"({sum(e['state'] == 'foreign' for e in entries.values())} foreign)")
