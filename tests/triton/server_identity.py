"""Byte identity of triton_helper.py's `serve` against its one-shot `compile`.

    python3 tests/triton/server_identity.py HELPER UNITS_DIR OUT_DIR [PATTERN]

Run from the directory the units were built in (the request files name
their sources relative to it; for the bundled package, the build
directory).  Compiles every UNITS_DIR/*.json request (or those whose name
contains PATTERN) once per `compile` process and once through one `serve`
process, in the same order, each with its own empty Triton cache (so both
really compile), and compares the cubins and metadata byte for byte; also
against the build's own .bin where there is one.  Prints one line per
difference and a summary with both ways' CPU; exits 1 on any difference.
Not registered with Meson: it takes about a minute per 50 units.
"""
import json
import os
import resource
import socket
import subprocess
import sys
import time


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(helper, units, out, pattern=""):
    requests = sorted(os.path.join(units, f) for f in os.listdir(units) if f.endswith(".json") and pattern in f)
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(out, "cache-oneshot"))
    started = children_cpu()
    for r in requests:
        stem = os.path.join(out, os.path.basename(r)[:-5])
        subprocess.run([sys.executable, helper, "compile", r, stem + ".1.cubin", stem + ".1.meta"], env=env)
    oneshot_cpu = children_cpu() - started

    sock = os.path.join(out, "s.sock")
    env["TRITON_CACHE_DIR"] = os.path.join(out, "cache-server")
    started = children_cpu()
    server = subprocess.Popen([sys.executable, helper, "serve", sock, "--idle", "30"], env=env)
    while True:
        try:
            c = socket.socket(socket.AF_UNIX)
            c.connect(sock)
            break
        except OSError:
            time.sleep(0.05)
    lines = c.makefile("rb")
    hello = json.loads(lines.readline())
    tool = compile_cpu = 0.0
    for r in requests:
        stem = os.path.join(out, os.path.basename(r)[:-5])
        c.sendall((json.dumps({"op": "compile", "request": r, "cubin": stem + ".2.cubin", "meta": stem + ".2.meta",
                               "cwd": os.getcwd()}) + "\n").encode())
        response = json.loads(lines.readline())
        tool += response["cpu"]
        compile_cpu += response["compile_cpu"]
        if not response["ok"]:
            print("server failed:", r, response["error"])
    c.sendall(b'{"op": "quit"}\n')
    server.wait()
    server_cpu = children_cpu() - started

    differ = 0
    for r in requests:
        stem = os.path.join(out, os.path.basename(r)[:-5])
        pairs = [(".1.cubin", ".2.cubin"), (".1.meta", ".2.meta")]
        for a, b in pairs:
            x = open(stem + a, "rb").read() if os.path.exists(stem + a) else None
            y = open(stem + b, "rb").read() if os.path.exists(stem + b) else None
            if x is None or x != y:
                differ += 1
                print("differs:", stem + a, stem + b)
        built = r[:-5] + ".bin"
        if os.path.exists(built) and open(built, "rb").read() != open(stem + ".2.cubin", "rb").read():
            differ += 1
            print("differs from the build's:", built)
    n = len(requests)
    print("%d units: %d differences" % (n, differ))
    print("one-shot: %.2f s CPU in all, %.3f s per unit" % (oneshot_cpu, oneshot_cpu / max(n, 1)))
    print("server: %.2f s CPU in all (start-up %.3f s), requests %.2f s, inside triton.compile %.2f s, "
          "overhead %.1f ms per unit" % (server_cpu, hello["startup_cpu"], tool, compile_cpu,
                                         1000 * (tool - compile_cpu) / max(n, 1)))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
