#!/bin/bash
# SPDX-License-Identifier: MIT
# Every PMPI_ function in src/mpi opens with VD_API_GUARD() (the
# MPI_THREAD_MULTIPLE lock, src/mpi/lock.c): a function without it would
# race with the other threads' calls.  f2c.c's conversions touch no state.
src=$(cd "$(dirname "$0")/.." && pwd)/src/mpi
python3 - "$src" <<'EOP'
import glob, os, re, sys
bad, n = [], 0
for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.c'))):
    if os.path.basename(p) == 'f2c.c':
        continue
    lines = open(p).read().split('\n')
    for i, line in enumerate(lines):
        if not re.match(r'^[A-Za-z_][\w ]*[ *]PMPI_\w+\(', line):
            continue
        j = i
        while not re.search(r'[;{)]\s*$', lines[j]):
            j += 1
        if lines[j].rstrip().endswith(';'):
            continue            # a declaration
        k = j if lines[j].rstrip().endswith('{') else j + 1
        n += 1
        if lines[k + 1].strip() != 'VD_API_GUARD();':
            bad.append('%s:%d: %s' % (os.path.basename(p), i + 1, line.strip()))
for b in bad:
    print('no VD_API_GUARD() at the top of', b)
print('%d PMPI_ functions, %d without the guard' % (n, len(bad)))
sys.exit(1 if bad or n < 100 else 0)
EOP
