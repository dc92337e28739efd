"""A stand-in for `triton_helper.py serve` (tests/compiler/triton_server_test.cc).

    python3 fake_triton_server.py serve SOCKET [--idle SECONDS]

Speaks the server's protocol (compiler/triton_server.h) without Triton.  Each
line it receives is appended to received.log beside the socket.  What a
compile does is the request file's "behave":
  ok          writes "cubin of NAME" and "{}" and answers ok
  fail        answers ok=false with a compile error's text
  crash       writes a line to its log, then kills itself (SIGKILL)
  crash-once  crash the first time (a REQUEST.crashed marker), then ok
  hang        sleeps until killed
  hang-once   hang the first time (a REQUEST.hung marker), then ok
FAKE_TRITON_STARTUP=die in the environment makes it exit 3 on start-up,
after a line on stderr.
"""
import json
import os
import signal
import socket
import sys
import time


def compile_request(message):
    os.chdir(message["cwd"])
    with open(message["request"]) as f:
        request = json.load(f)
    behave = request["behave"]
    for kind in ("crash", "hang"):
        if behave == kind + "-once":
            marker = message["request"] + (".crashed" if kind == "crash" else ".hung")
            if os.path.exists(marker):
                behave = "ok"
            else:
                open(marker, "w").close()
                behave = kind
    if behave == "crash":
        sys.stderr.write("fake: crashing on purpose while compiling %s\n" % request["name"])
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    if behave == "hang":
        while True:
            time.sleep(60)
    if behave == "fail":
        return {"ok": False, "error": "fake.py:3:7: error: on purpose\nTriton failed to compile %s: CompilationError\n"
                % request["name"], "cpu": 0.125, "compile_cpu": 0.0625}
    with open(message["cubin"], "w") as f:
        f.write("cubin of %s" % request["name"])
    with open(message["meta"], "w") as f:
        f.write("{}")
    return {"ok": True, "error": "", "cpu": 0.5, "compile_cpu": 0.375}


def serve(path, idle):
    if os.environ.get("FAKE_TRITON_STARTUP") == "die":
        sys.stderr.write("fake: cannot start (on purpose)\n")
        return 3
    directory = os.path.dirname(os.path.abspath(path))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    os.chdir(directory)  # as the real one: the path may be too long to bind
    listener.bind(os.path.basename(path))
    listener.listen(4)
    listener.settimeout(idle)
    hello = {"pid": os.getpid(), "startup_cpu": 0.25, "triton_version": "fake"}
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                return 0
            with conn:
                conn.sendall((json.dumps(hello) + "\n").encode())
                for line in conn.makefile("rb"):
                    with open(os.path.join(directory, "received.log"), "ab") as log:
                        log.write(line)
                    message = json.loads(line)
                    if message["op"] == "quit":
                        return 0
                    conn.sendall((json.dumps(compile_request(message)) + "\n").encode())
    finally:
        os.unlink(os.path.join(directory, os.path.basename(path)))


if __name__ == "__main__":
    sys.exit(serve(sys.argv[2], float(sys.argv[4]) if len(sys.argv) > 4 else 60.0))
