#!/usr/bin/python3
# A stand-in for journald's native socket, for tests in a private mount
# namespace: binds /run/systemd/journal/socket, writes each datagram as a
# JSON object per line to argv[1], creates argv[2] once listening, and ends
# after 3 s without a datagram.
# journald's native protocol: KEY=VALUE\n, or KEY\n<le64 length><value>\n
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/run/systemd/journal/socket")
s.settimeout(3)
out = open(sys.argv[1], "w")
open(sys.argv[2], "w").close()  # ready
while True:
    try:
        d = s.recv(1 << 20)
    except socket.timeout:
        break
    e, i = {}, 0
    while i < len(d):
        nl = d.index(b"\n", i)
        line = d[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            i = nl + 1
        else:
            k = line
            n = struct.unpack("<Q", d[nl + 1:nl + 9])[0]
            v = d[nl + 9:nl + 9 + n]
            i = nl + 9 + n + 1
        e[k.decode()] = v.decode(errors="replace")
    out.write(json.dumps(e) + "\n")
    out.flush()
