#!/usr/bin/env python3
"""cputime.py OUT COMMAND...: runs COMMAND and writes to OUT the CPU-seconds
(user, system) of it and of every process it waited for, and its wall time,
as one line: "cpu user U system S wall W".  GNU time does the same, where
installed; the GPU machines lack it.  Exits with COMMAND's status."""
import resource
import subprocess
import sys
import time

start = time.monotonic()
rc = subprocess.call(sys.argv[2:])
wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    f.write("cpu user %.2f system %.2f wall %.2f\n" % (usage.ru_utime, usage.ru_stime, wall))
sys.exit(rc)
