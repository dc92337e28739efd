#!/usr/bin/env python3
"""Triton's JIT costs on the host, with the vector_add kernel of
templates/triton/vector_add.py on n = 4096 f32 elements (device time is
negligible, so what is measured is the host side).

Measurements (JSON lines, section "triton_jit"):

  first_call_fresh_cache       ms  A fresh process with an empty TRITON_CACHE_DIR,
                                   CUDA context created and inputs allocated
                                   beforehand: time from the first launch call
                                   to torch.cuda.synchronize() after it.  It
                                   includes Triton's one-time driver setup
                                   (building its C helper and launcher with the
                                   host C compiler) and the compile.
  new_constexpr_fresh_cache    ms  Same process, right after: the first call
                                   with a NEW constexpr value (BLOCK=512
                                   instead of 1024) -- the cost of one more
                                   specialization, compile included, helpers
                                   already built.
  first_call_warm_disk_cache   ms  A second fresh process on the same cache
                                   directory: the first call finds everything
                                   on disk.
  new_constexpr_warm_disk_cache ms Same, for the second constexpr value.
  warm_call_host               us  In-process cached call: host time of the
                                   launch call alone, median over >= 2000
                                   calls (timed one by one, synchronized every
                                   100 calls outside the timed region).
  torch_add_host               us  torch.add(x, y) on the same tensors, timed
                                   the same way.
  torch_add_out_host           us  torch.add(x, y, out=o), the same way.
  import_torch_triton          ms  (extra) import torch + triton + the kernel
                                   module in a fresh process.

Fresh-process measurements are repeated --reps times (>= 5), each with its
own new cache directory; value is the median, with min and max.  Host-time
measurements report the median over all calls, with min and max of the
individual calls and p10/p90.

    python3 bench/triton/triton_jit_cost.py [--reps 5] [--calls 2000]

Human notes go to stderr.  Exit status: 77 without a CUDA device (or torch),
1 if a measurement failed, else 0.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in templates/triton
HERE = os.path.dirname(os.path.abspath(__file__))
KDIR = os.path.normpath(os.path.join(HERE, "..", "..", "templates", "triton"))
N = 4096

# Runs in a fresh interpreter: prints one JSON object on its last stdout line.
CHILD = r"""
import json, os, sys, time
sys.dont_write_bytecode = True
t0 = time.perf_counter()
import torch
import triton
sys.path.insert(0, KDIR)
import importlib.util
spec = importlib.util.spec_from_file_location("kpack_triton_vector_add", os.path.join(KDIR, "vector_add.py"))
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
K = mod.vector_add
t_import = time.perf_counter() - t0

# CUDA context and inputs first: not part of any measurement.
torch.cuda.init()
x = torch.randn(N, device="cuda")
y = torch.randn(N, device="cuda")
o = torch.empty(N, device="cuda")
torch.cuda.synchronize()

def first(block):
    o.zero_()
    torch.cuda.synchronize()
    t = time.perf_counter()
    K[(triton.cdiv(N, block),)](x, y, o, N, BLOCK=block, num_warps=4)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    ok = bool(torch.equal(o, x + y))
    return dt, ok

res = {"import_s": t_import}
if MODE in ("fresh", "warm"):
    res["first_s"], ok1 = first(1024)
    res["second_s"], ok2 = first(512)
    res["ok"] = ok1 and ok2
    res["cache_files"] = sum(len(f) for _, _, f in os.walk(os.environ["TRITON_CACHE_DIR"]))
else:  # host timing
    grid = (triton.cdiv(N, 1024),)
    K[grid](x, y, o, N, BLOCK=1024, num_warps=4)
    torch.cuda.synchronize()
    res["ok"] = bool(torch.equal(o, x + y))
    pc = time.perf_counter_ns

    def host_times(call, calls, batch=100):
        for _ in range(200):  # warm up
            call()
        torch.cuda.synchronize()
        out = []
        while len(out) < calls:
            for _ in range(batch):
                t = pc()
                call()
                out.append(pc() - t)
            torch.cuda.synchronize()
        return [v / 1e3 for v in out]  # us

    res["triton_us"] = host_times(lambda: K[grid](x, y, o, N, BLOCK=1024, num_warps=4), CALLS)
    res["torch_add_us"] = host_times(lambda: torch.add(x, y), CALLS)
    res["torch_add_out_us"] = host_times(lambda: torch.add(x, y, out=o), CALLS)
print(json.dumps(res))
"""


def note(*a):
    print(*a, file=sys.stderr, flush=True)


def emit(**kw):
    print(json.dumps(kw), flush=True)


def run_child(mode, cache_dir, calls=0, timeout=600):
    env = dict(os.environ)
    env["TRITON_CACHE_DIR"] = cache_dir
    env["PYTHONUNBUFFERED"] = "1"
    # Keep Triton's other per-user directories out of the way too.
    env["TRITON_HOME"] = cache_dir
    for k in ("TRITON_ALWAYS_COMPILE", "TRITON_INTERPRET", "TRITON_KERNEL_DUMP", "TRITON_DUMP_DIR"):
        env.pop(k, None)
    code = f"KDIR = {KDIR!r}\nN = {N}\nMODE = {mode!r}\nCALLS = {calls}\n" + CHILD
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"child ({mode}) exited {p.returncode}: {p.stderr.strip()[-3000:]}")
    lines = [l for l in p.stdout.strip().splitlines() if l.startswith("{")]
    if not lines:
        raise RuntimeError(f"child ({mode}) printed no result: {p.stdout[-1000:]} {p.stderr[-2000:]}")
    return json.loads(lines[-1])


def summary(name, values, unit, **extra):
    emit(section="triton_jit", name=name, value=round(statistics.median(values), 4), unit=unit, n=len(values),
         min=round(min(values), 4), max=round(max(values), 4), **extra)
    note(f"  {name:32s} median {statistics.median(values):10.3f} {unit}  "
         f"min {min(values):10.3f}  max {max(values):10.3f}  (n={len(values)})")


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(p / 100 * (len(s) - 1)))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="fresh-process repetitions (>= 5)")
    ap.add_argument("--calls", type=int, default=2000, help="warm calls timed per host measurement (>= 2000)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary cache directories")
    args = ap.parse_args()
    args.reps = max(args.reps, 5)
    args.calls = max(args.calls, 2000)

    try:
        import torch
    except ImportError as e:
        note(f"torch not importable ({e}): skipping")
        return 77
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        note("no CUDA device: skipping")
        return 77
    import triton
    emit(section="triton_env", device=torch.cuda.get_device_name(0), torch=torch.__version__,
         triton=triton.__version__, cuda=torch.version.cuda, python=sys.version.split()[0])
    note(f"device {torch.cuda.get_device_name(0)}, torch {torch.__version__}, triton {triton.__version__}")

    failures = 0
    fresh, fresh2, warm, warm2, imports = [], [], [], [], []
    dirs = []
    for i in range(args.reps):
        d = tempfile.mkdtemp(prefix="kpack_triton_jit_")
        dirs.append(d)
        try:
            r = run_child("fresh", d)
            w = run_child("warm", d)
        except Exception as e:
            failures += 1
            note(f"!!! repetition {i} failed: {e}")
            continue
        if not (r["ok"] and w["ok"]):
            failures += 1
            note(f"!!! repetition {i}: vector_add result wrong (fresh ok={r['ok']}, warm ok={w['ok']})")
        fresh.append(r["first_s"] * 1e3)
        fresh2.append(r["second_s"] * 1e3)
        warm.append(w["first_s"] * 1e3)
        warm2.append(w["second_s"] * 1e3)
        imports += [r["import_s"] * 1e3, w["import_s"] * 1e3]
        note(f"  rep {i}: fresh first {fresh[-1]:.1f} ms, fresh new constexpr {fresh2[-1]:.1f} ms, "
             f"warm-disk first {warm[-1]:.1f} ms, warm-disk second {warm2[-1]:.1f} ms "
             f"({r['cache_files']} files in the cache)")
    if fresh:
        summary("first_call_fresh_cache", fresh, "ms")
        summary("new_constexpr_fresh_cache", fresh2, "ms")
        summary("first_call_warm_disk_cache", warm, "ms")
        summary("new_constexpr_warm_disk_cache", warm2, "ms")
        summary("import_torch_triton", imports, "ms")

    try:
        d = tempfile.mkdtemp(prefix="kpack_triton_jit_")
        dirs.append(d)
        h = run_child("host", d, calls=args.calls)
        if not h["ok"]:
            failures += 1
            note("!!! host-timing child: vector_add result wrong")
        for name, key in (("warm_call_host", "triton_us"), ("torch_add_host", "torch_add_us"),
                          ("torch_add_out_host", "torch_add_out_us")):
            v = h[key]
            summary(name, v, "us", p10=round(pct(v, 10), 3), p90=round(pct(v, 90), 3))
    except Exception as e:
        failures += 1
        note(f"!!! host timing failed: {e}")

    if not args.keep:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
