#!/usr/bin/env python3
"""What Triton's own @autotune picks, and what its first call per new key
costs, for the Triton twins that kpack tunes offline (issue 16).

For softmax_triton and cross_entropy_triton, the kernels of templates/triton/
are wrapped in triton.autotune with exactly the configs kpack builds (the
manifests' BLOCK x num_warps pairs) and key = the manifest's tune key.  Then,
for every shape of SHAPES (the "eval" JSON lines of the tuning harness's
`--eval` mode, docs/tuning.md: the untuned shapes kpack's auto dispatcher
was judged on):

  first_call_ms   wall time of the first call with this key value (Triton
                  benchmarks every config: the autotuning itself; the configs
                  were compiled at an earlier key, so no compile is in it),
                  synchronized;
  picked          the config autotune chose ("BLOCK=4096 num_warps=8", the
                  label kpack's tuning files use), so bench/tune/quality.py
                  can take that config's time from kpack's own measurement at
                  the same shape, in the same run of the device.

The first key of each (kernel, dtype) is reported separately as
first_call_cold_ms: it includes compiling every config.

    python3 bench/tune/triton_autotune.py SHAPES.jsonl > autotune.jsonl

Exit status: 77 without a CUDA device (or torch), 1 on an error, else 0.
"""
import importlib.util
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in templates/triton
HERE = os.path.dirname(os.path.abspath(__file__))
KDIR = os.path.normpath(os.path.join(HERE, "..", "..", "templates", "triton"))

# kernel -> (module, entry, the built (BLOCK, num_warps) pairs, key params)
KERNELS = {
    "softmax_triton": ("softmax", "softmax", [(1024, 4), (4096, 4), (8192, 16), (32768, 16)], ["rows", "cols"]),
    "cross_entropy_triton": ("cross_entropy", "cross_entropy_fwd", [(2048, 4), (4096, 8)], ["rows", "vocab"]),
}


def note(*a):
    print(*a, file=sys.stderr, flush=True)


def load(module):
    spec = importlib.util.spec_from_file_location("kpack_triton_" + module, os.path.join(KDIR, module + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def rec_combo(combo):
    return " ".join("%s=%s" % kv for kv in combo.items())


def label(config):
    return "BLOCK=%d num_warps=%d" % (config.kwargs["BLOCK"], config.num_warps)


def main():
    if len(sys.argv) != 2:
        note("usage: triton_autotune.py SHAPES.jsonl")
        return 2
    try:
        import torch
        import triton
    except ImportError as e:
        note("no torch/triton:", e)
        return 77
    if not torch.cuda.is_available():
        return 77
    shapes = []
    with open(sys.argv[1]) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rec = json.loads(line).get("eval")
                if rec and rec.get("kernel") in KERNELS:
                    combo = dict(part.split("=", 1) for part in rec["combo"].split())
                    shapes.append({"kernel": rec["kernel"], "combo": combo, "shape": rec["key"]})
    seen = set()
    tuned = {}
    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    for rec in shapes:
        kernel, combo, shape = rec["kernel"], rec["combo"], rec["shape"]
        key = (kernel, json.dumps(combo, sort_keys=True), json.dumps(shape, sort_keys=True))
        if key in seen:
            continue
        seen.add(key)
        module, entry, pairs, keys = KERNELS[kernel]
        tk = (kernel, combo["T"])
        if tk not in tuned:
            fn = getattr(load(module), entry)
            configs = [triton.Config({"BLOCK": b}, num_warps=w) for b, w in pairs]
            tuned[tk] = [triton.autotune(configs=configs, key=keys)(fn), True]
        wrapped, cold = tuned[tk]
        rows = shape["rows"]
        T = dt[combo["T"]]
        if kernel == "softmax_triton":
            cols = shape["cols"]
            x = torch.randn(rows, cols, device="cuda", dtype=T)
            y = torch.empty_like(x)
            args = (x, y, rows, cols, cols, cols)
        else:
            vocab = shape["vocab"]
            x = torch.randn(rows, vocab, device="cuda", dtype=T)
            t = torch.randint(0, vocab, (rows,), device="cuda", dtype=torch.int64)
            loss = torch.empty(rows, device="cuda", dtype=torch.float32)
            args = (x, t, loss, rows, vocab, vocab, -100)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        wrapped[(rows,)](*args)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        tuned[tk][1] = False
        out = {"section": "triton_autotune", "kernel": kernel, "combo": rec_combo(combo), "shape": shape,
               "picked": label(wrapped.best_config)}
        out["first_call_cold_ms" if cold else "first_call_ms"] = round(ms, 3)
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
