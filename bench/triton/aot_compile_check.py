#!/usr/bin/env python3
"""Compiles every kernel in templates/triton/ to a cubin with Triton's own
compiler for an explicit target (no GPU, no torch needed), the way kpack's
AOT path will: triton.compile(ASTSource(fn, signature, constexprs, attrs),
target=GPUTarget("cuda", arch, 32)).

For each specialization it prints one JSON line: the PTX target, the number
of kernel parameters in the PTX entry (Triton appends 2 scratch pointers),
registers and stack bytes (cuobjdump), shared memory, global scratch (must
be 0 for AOT), and the widest global load and store in the PTX in bytes (16 =
16-byte vector accesses).  Exit status 1 if any
specialization fails to compile or needs global scratch.

    python3 bench/triton/aot_compile_check.py [--arch 90] [--arch 80] [--no-hints]

--no-hints compiles without divisibility-16 hints on pointers / strides,
i.e. what an AOT build gets if it promises nothing about alignment.
"""
import argparse
import importlib.util
import json
import os
import re
import sys
import tempfile
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in templates/triton
HERE = os.path.dirname(os.path.abspath(__file__))
KDIR = os.path.normpath(os.path.join(HERE, "..", "..", "templates", "triton"))


def note(*a):
    print(*a, file=sys.stderr, flush=True)


def load(name):
    spec = importlib.util.spec_from_file_location("kpack_triton_" + name, os.path.join(KDIR, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


DT = {"f32": "fp32", "f16": "fp16", "bf16": "bf16"}


def specs():
    """(kernel module, entry, tag, signature, constexprs, hinted arg names, num_warps)."""
    out = []
    for t in ("f32", "f16", "bf16"):
        T = "*" + DT[t]
        half = t != "f32"
        for block, nw in ((2048, 4), (4096, 8)) if not half else ((4096, 4), (8192, 8)):
            out.append(("vector_add", "vector_add", f"{t}_b{block}_w{nw}",
                        {"x": T, "y": T, "out": T, "n": "i64", "BLOCK": "constexpr"},
                        {"BLOCK": block}, ["x", "y", "out"], nw))
        for block, nw in ((512, 4), (1024, 8)) if not half else ((1024, 4), (2048, 8)):
            out.append(("giou_loss", "giou_loss_fwd", f"{t}_b{block}_w{nw}",
                        {"preds": T, "targets": T, "giou": T, "valid": "*u8", "num_boxes": "i64",
                         "BLOCK": "constexpr"}, {"BLOCK": block}, ["preds", "targets", "giou", "valid"], nw))
        for causal in (True, False):
            for tile, nw in ((4096, 4), (16384, 8)):
                out.append(("attention_mask_fill", "attention_mask_fill",
                            f"{t}_{'causal' if causal else 'nocausal'}_t{tile}_w{nw}",
                            {"q_len": "*i32", "kv_len": "*i32", "mask_offsets": "*i64", "mask": T,
                             "num_requests": "i32", "max_q_len": "i32", "max_kv_len": "i32",
                             "CAUSAL": "constexpr", "TILE": "constexpr"},
                            {"CAUSAL": causal, "TILE": tile}, ["q_len", "kv_len", "mask_offsets", "mask"], nw))
        for block, nw in ((4096, 8), (8192, 16), (32768, 16), (32768, 32)):
            out.append(("softmax", "softmax", f"{t}_b{block}_w{nw}",
                        {"inp": T, "out": T, "rows": "i64", "cols": "i64", "in_row_stride": "i64",
                         "out_row_stride": "i64", "BLOCK": "constexpr"}, {"BLOCK": block},
                        ["inp", "out", "in_row_stride", "out_row_stride"], nw))
        for block, nw in ((2048, 4), (4096, 8), (8192, 16)):
            out.append(("cross_entropy", "cross_entropy_fwd", f"{t}_b{block}_w{nw}",
                        {"logits": T, "targets": "*i64", "loss": "*fp32", "rows": "i64", "vocab": "i64",
                         "row_stride": "i64", "ignore_index": "i64", "BLOCK": "constexpr"}, {"BLOCK": block},
                        ["logits", "targets", "loss", "row_stride"], nw))
    return out


def resource_usage(cubin):
    """(registers, stack bytes) from the cuobjdump that ships with Triton, or (None, None)."""
    import subprocess
    import triton
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    if not os.path.exists(tool):
        return None, None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    m = re.search(r"REG:(\d+) STACK:(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def widest(ptx, op):
    best = 0
    for m in re.finditer(r"\b" + op + r"\.global(?:\.[a-z0-9_:]+)*?(?:\.v(\d))?\.(b|f|u|s)(\d+)", ptx):
        vec = int(m.group(1) or 1)
        best = max(best, vec * int(m.group(3)) // 8)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", type=int, action="append", help="SM arch number, e.g. 90 (default: 90)")
    ap.add_argument("--no-hints", action="store_true")
    ap.add_argument("--only", default=None, help="compile only this kernel")
    ap.add_argument("--dump", default=None, help="directory to write .ptx/.ttgir/.cubin into")
    args = ap.parse_args()
    archs = args.arch or [90]

    # Keep the compile cache out of the user's ~/.triton.
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="kpack_triton_aot_"))
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    mods = {}
    failures = 0
    for kname, entry, tag, sig, cex, hinted, nw in specs():
        if args.only and kname != args.only:
            continue
        if kname not in mods:
            mods[kname] = load(kname)
        fn = getattr(mods[kname], entry)
        names = fn.arg_names
        attrs = {} if args.no_hints else {(names.index(a),): [["tt.divisibility", 16]] for a in hinted}
        for arch in archs:
            target = GPUTarget("cuda", arch, 32)
            rec = {"kernel": kname, "spec": tag, "arch": f"sm_{arch}", "num_warps": nw,
                   "hints": not args.no_hints}
            try:
                src = ASTSource(fn=fn, signature=sig, constexprs=cex, attrs=attrs)
                ck = triton.compile(src, target=target, options={"num_warps": nw})
                md = ck.metadata
                ptx = ck.asm["ptx"]
                regs, stack = resource_usage(ck.asm["cubin"])
                entry = ptx[ptx.index(".entry"):]
                entry = entry[:entry.index(")")]
                rec.update({
                    "ok": True,
                    "name": md.name,
                    "ptx_target": re.search(r"\.target\s+(\S+)", ptx).group(1),
                    # Triton appends two pointer parameters (global and profile
                    # scratch) after the kernel's own; an AOT launcher passes NULL.
                    "kernel_params": entry.count(".param"),
                    "regs": regs,
                    "stack": stack,
                    "shared": md.shared,
                    "global_scratch": getattr(md, "global_scratch_size", 0),
                    "cubin_bytes": len(ck.asm["cubin"]),
                    "widest_ld": widest(ptx, "ld"),
                    "widest_st": widest(ptx, "st"),
                })
                if rec["global_scratch"]:
                    rec["ok"] = False
                    rec["error"] = "needs global scratch (AOT cannot provide it)"
                    failures += 1
                if args.dump:
                    os.makedirs(args.dump, exist_ok=True)
                    stem = os.path.join(args.dump, f"{kname}_{tag}_sm{arch}")
                    for ext in ("ttgir", "ptx"):
                        with open(f"{stem}.{ext}", "w") as f:
                            f.write(ck.asm[ext])
                    with open(f"{stem}.cubin", "wb") as f:
                        f.write(ck.asm["cubin"])
            except Exception as e:  # report and go on with the rest
                rec.update({"ok": False, "error": f"{type(e).__name__}: {e}"[:2000]})
                note(traceback.format_exc())
                failures += 1
            print(json.dumps(rec), flush=True)
    note(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
