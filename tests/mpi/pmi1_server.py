#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A minimal PMI-1 launcher for tests: starts N copies of a program with
PMI_FD/PMI_RANK/PMI_SIZE and serves the PMI-1 wire protocol (init,
get_maxes, get_appnum, get_my_kvsname, put, barrier, get, finalize, abort) with a
kvsname the caller chooses -- so that two jobs can carry the same name,
as two launchers' jobs may (Slurm's JOBID.STEPID of two clusters, a
launcher's pid in two containers).

    pmi1_server.py KVSNAME N PROGRAM [ARGS...]

Exits with the first non-zero exit status of a rank (128+signal for a
signal), 0 when all exit 0; a rank that aborts ends the job.

PMI1_TAMPER="KEY=VALUE ..." stores VALUE whenever a rank puts KEY: a
rank that published something else, as another build of the library
would."""
import os
import selectors
import signal
import socket
import subprocess
import sys


def main():
    kvsname, n, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    sel = selectors.DefaultSelector()
    procs, bufs, kvs, waiting = [], {}, {}, []
    for rank in range(n):
        ours, theirs = socket.socketpair()
        env = dict(os.environ, PMI_FD=str(theirs.fileno()), PMI_RANK=str(rank),
                   PMI_SIZE=str(n))
        procs.append(subprocess.Popen(argv, env=env, pass_fds=[theirs.fileno()]))
        theirs.close()
        sel.register(ours, selectors.EVENT_READ, rank)
        bufs[ours] = b""
    live = n
    while live:
        for key, _ in sel.select(timeout=60):
            sock = key.fileobj
            data = sock.recv(4096)
            if not data:
                sel.unregister(sock)
                live -= 1
                continue
            bufs[sock] += data
            while b"\n" in bufs[sock]:
                line, bufs[sock] = bufs[sock].split(b"\n", 1)
                attrs = dict(w.split("=", 1) for w in line.decode().split() if "=" in w)
                reply(sock, attrs, kvsname, n, kvs, waiting, procs)
    status = 0
    for p in procs:
        rc = p.wait()
        rc = 128 - rc if rc < 0 else rc
        status = status or rc
    sys.exit(status)


def reply(sock, a, kvsname, n, kvs, waiting, procs):
    cmd = a.get("cmd")
    if cmd == "init":
        send(sock, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0")
    elif cmd == "get_maxes":
        send(sock, "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024")
    elif cmd == "get_appnum":
        send(sock, "cmd=appnum rc=0 appnum=0")
    elif cmd == "get_my_kvsname":
        send(sock, "cmd=my_kvsname rc=0 kvsname=" + kvsname)
    elif cmd == "put":
        tamper = dict(w.split("=", 1) for w in os.environ.get("PMI1_TAMPER", "").split()
                      if "=" in w)
        kvs[a["key"]] = tamper.get(a["key"], a["value"])
        send(sock, "cmd=put_result rc=0")
    elif cmd == "get":
        v = kvs.get(a["key"])
        send(sock, "cmd=get_result rc=0 value=" + v if v is not None else
             "cmd=get_result rc=-1")
    elif cmd == "barrier_in":
        waiting.append(sock)
        if len(waiting) == n:
            for s in waiting:
                send(s, "cmd=barrier_out rc=0")
            waiting.clear()
    elif cmd == "finalize":
        send(sock, "cmd=finalize_ack rc=0")
    elif cmd == "abort":
        for p in procs:
            p.send_signal(signal.SIGKILL)
        sys.exit(int(a.get("exitcode", 1)) or 1)


def send(sock, line):
    sock.sendall((line + "\n").encode())


if __name__ == "__main__":
    main()
