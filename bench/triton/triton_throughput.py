#!/usr/bin/env python3
"""Throughput of the Triton versions of kpack's bundled kernels.

The Triton kernels live in templates/triton/ (one file per kernel).  For each
kernel, dtype (f32, f16, bf16) and shape below, this script

  1. validates the Triton kernel once against a torch reference (loudly on
     failure, then goes on with the other kernels), also on small odd shapes
     (ragged, misaligned, -inf rows, ignore_index, ...);
  2. times a few launch configurations (BLOCK, num_warps) with
     triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median"),
     cycling through >= 3 input/output sets so that no launch finds its
     inputs in L2 (every buffer is far larger than L2 anyway, and do_bench
     also flushes L2 between launches);
  3. times torch's own op where one exists (torch.add, torch.softmax,
     F.cross_entropy(reduction='none')) the same way;
  4. relates everything to the device-to-device copy ceiling measured in the
     same process (torch dst.copy_(src) of 1 GiB, bytes = 2 x 1 GiB).

Shapes (the CUDA throughput bench's):
  vector_add     n = 2^28 (f32), 2^29 (f16, bf16): the same bytes
  giou_loss      B = 2^24 boxes
  attention_mask_fill  64 requests, q = kv = 2048, causal, f16 mask
                 (plus q = kv = 2047, whose rows are not 16-byte aligned)
  softmax        32768 x 4096 and 4096 x 32768 (strides multiples of 16),
                 4096 x 50257 (odd: the JIT, and kpack, run unhinted code)
  cross_entropy  16384 x 32000 and 4096 x 128256, 4096 x 50257 (odd)

bytes = the minimal bytes moved: every input read once, every output written
once.  tbps = bytes / time / 1e12.

Output: JSON lines on stdout.
  {"section": "triton_throughput", "kernel", "dtype", "shape", "bytes", "us",
   "tbps", "ceiling_tbps", "ratio", "impl": "triton"|"torch", "config", "valid"}
     impl "triton": the fastest configuration tried (config names it);
     kernel "d2d_copy" (impl "torch") is the ceiling itself.
  {"section": "triton_throughput_sweep", ...}  every configuration tried
  {"section": "triton_validate", "kernel", "dtype", "case", "ok", "detail"}
  {"section": "triton_env", "device", "torch", "triton", "cuda"}
Human notes go to stderr.  Exit status: 77 without a CUDA device (or torch),
1 if any validation failed or a kernel raised, else 0.

    python3 bench/triton/triton_throughput.py [--kernels softmax,cross_entropy]
        [--dtypes f16] [--quick] [--sets 3] [--rep 200] [--warmup 25]
"""
import argparse
import importlib.util
import json
import os
import re
import sys
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in templates/triton
HERE = os.path.dirname(os.path.abspath(__file__))
KDIR = os.path.normpath(os.path.join(HERE, "..", "..", "templates", "triton"))

KERNELS = ("vector_add", "giou_loss", "attention_mask_fill", "softmax", "cross_entropy")
DTYPES = ("f32", "f16", "bf16")

# Launch configurations tried per kernel: (name, constexpr kwargs, num_warps).
# The first is the default (the only one with --quick).  Sizes are in
# elements, so 16-bit types get twice the elements for the same bytes.
def vector_add_configs(dt):
    e = 1 if dt == "f32" else 2
    return [(f"BLOCK={b * e},w{w}", {"BLOCK": b * e}, w) for b, w in ((2048, 4), (1024, 4), (4096, 8), (8192, 8))]


def giou_configs(dt):
    e = 1 if dt == "f32" else 2
    return [(f"BLOCK={b * e},w{w}", {"BLOCK": b * e}, w) for b, w in ((512, 4), (256, 4), (1024, 4), (1024, 8))]


def mask_configs(dt):
    return [(f"TILE={t},w{w}", {"TILE": t}, w) for t, w in ((4096, 4), (4096, 8), (16384, 8), (16384, 4), (8192, 8))]


def softmax_configs(dt, cols):
    if cols <= 8192:
        return [(f"BLOCK={cols},w{w}", {"BLOCK": cols}, w) for w in (8, 4, 16)]
    # Long rows: the whole row in registers (BLOCK = cols rounded up to a
    # power of two, as tl.arange needs) or the two-pass chunked path (BLOCK < cols).
    whole = 1 << (cols - 1).bit_length()
    return [
        (f"BLOCK={whole},w32", {"BLOCK": whole}, 32),
        (f"BLOCK={whole},w16", {"BLOCK": whole}, 16),
        ("BLOCK=8192,w16 (2-pass)", {"BLOCK": 8192}, 16),
        ("BLOCK=8192,w8 (2-pass)", {"BLOCK": 8192}, 8),
        ("BLOCK=4096,w8 (2-pass)", {"BLOCK": 4096}, 8),
    ]


def ce_configs(dt, vocab):
    return [(f"BLOCK={b},w{w}", {"BLOCK": b}, w)
            for b, w in ((4096, 8), (2048, 4), (8192, 8), (8192, 16), (16384, 16))]


# "BLOCK=4096,w8 (2-pass)" -> ("BLOCK", 4096, 8): what identifies a launch
# configuration, whatever the sweep's label adds.
CONFIG_RE = re.compile(r"^(\w+)=(\d+),w(\d+)")
# kpack's spec names carry the same numbers under their manifest tags:
# softmax_triton_f32_b1024_w4 -> ("BLOCK", 1024, 4); t is the mask's TILE.
SPEC_RE = re.compile(r"^(\w+)_triton_(f32|f16|bf16)_(?:\w+_)?([bt])(\d+)_w(\d+)$")
TAG_PARAM = {"b": "BLOCK", "t": "TILE"}


def config_key(name):
    m = CONFIG_RE.match(name)
    return (m.group(1), int(m.group(2)), int(m.group(3))) if m else None


def kpack_configs(path):
    """{(kernel, dtype): {(param, value, warps)}} of the Triton specs that
    kpack's throughput bench ran (its JSON lines), so that the sweep times
    Triton's JIT on exactly those configurations too: the same-configuration
    comparison of bench/report.py."""
    found = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            m = SPEC_RE.match(r.get("spec", "")) if r.get("section") == "throughput" else None
            if m:
                found.setdefault((m.group(1), m.group(2)), set()).add(
                    (TAG_PARAM[m.group(3)], int(m.group(4)), int(m.group(5))))
    return found


def note(*a):
    print(*a, file=sys.stderr, flush=True)


def emit(**kw):
    print(json.dumps(kw), flush=True)


def load_kernel_module(name):
    spec = importlib.util.spec_from_file_location("kpack_triton_" + name, os.path.join(KDIR, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


class Bench:

    def __init__(self, args, torch, triton):
        self.args = args
        self.torch = torch
        self.triton = triton
        self.dev = torch.device("cuda")
        self.ceiling = None
        self.failures = 0
        self.tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
        self.k = {name: load_kernel_module(name) for name in KERNELS}
        self.kpack = kpack_configs(args.match_kpack) if args.match_kpack else {}

    # ---- helpers ---------------------------------------------------------

    def esize(self, dt):
        return 4 if dt == "f32" else 2

    def time_ms(self, fn):
        return self.triton.testing.do_bench(fn, warmup=self.args.warmup, rep=self.args.rep, return_mode="median")

    def rotating(self, call, sets):
        state = [0]

        def fn():
            i = state[0]
            state[0] = (i + 1) % len(sets)
            call(*sets[i])

        return fn

    def record(self, section, kernel, dt, shape, nbytes, ms, impl, config=None, valid=None):
        us = ms * 1e3
        tbps = nbytes / (ms * 1e-3) / 1e12
        rec = {"section": section, "kernel": kernel, "dtype": dt, "shape": shape, "bytes": int(nbytes),
               "us": round(us, 3), "tbps": round(tbps, 4),
               "ceiling_tbps": round(self.ceiling, 4) if self.ceiling else None,
               "ratio": round(tbps / self.ceiling, 4) if self.ceiling else None, "impl": impl}
        if config is not None:
            rec["config"] = config
        if valid is not None:
            rec["valid"] = valid
        emit(**rec)
        return tbps

    def validated(self, kernel, dt, case, ok, detail=""):
        emit(section="triton_validate", kernel=kernel, dtype=dt, case=case, ok=bool(ok), detail=str(detail)[:500])
        if not ok:
            self.failures += 1
            note("!" * 72)
            note(f"!!! VALIDATION FAILED: {kernel} {dt} {case}: {detail}")
            note("!" * 72)
        return bool(ok)

    def close(self, got, want, rtol, atol):
        """(ok, detail): got vs want elementwise, NaN == NaN, inf == inf."""
        torch = self.torch
        g = got.double()
        w = want.double()
        ok_el = torch.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        ok = bool(ok_el.all())
        if ok:
            fin = torch.isfinite(w) & torch.isfinite(g)
            err = (g - w).abs()[fin]
            return True, f"max_abs_err={float(err.max()) if err.numel() else 0.0:.3g}"
        bad = (~ok_el).nonzero()
        first = bad[:4].tolist()
        idx = tuple(bad[0].tolist())
        return False, (f"{bad.shape[0]} of {ok_el.numel()} elements off (rtol={rtol}, atol={atol}); "
                       f"first at {first}: got {float(g[idx])!r} want {float(w[idx])!r}")

    def sweep(self, kernel, dt, shape, nbytes, configs, make_launch, sets, check, prefill):
        """Validates and times each configuration; emits the sweep lines and
        the best valid one.  make_launch(cex, nw) -> call(*set); prefill(set)
        fills the outputs with values the kernel never writes (so that a
        skipped element is caught); check(set) -> (ok, detail) after
        call(*set) ran."""
        if self.args.quick:
            configs = configs[:1]
        have = {config_key(name) for name, _, _ in configs}
        for param, value, warps in sorted(self.kpack.get((kernel, dt), ())):
            if (param, value, warps) not in have:
                configs = configs + [(f"{param}={value},w{warps} (kpack's)", {param: value}, warps)]
        best = None
        for name, cex, nw in configs:
            try:
                call = make_launch(cex, nw)
                prefill(sets[0])
                call(*sets[0])
                self.torch.cuda.synchronize()
                ok, detail = check(sets[0])
                self.validated(kernel, dt, f"{shape} {name}", ok, detail)
                ms = self.time_ms(self.rotating(call, sets))
                tbps = self.record("triton_throughput_sweep", kernel, dt, shape, nbytes, ms, "triton", name, ok)
                note(f"  {kernel:20s} {dt:5s} {shape:28s} {name:26s} {ms * 1e3:10.1f} us {tbps:7.3f} TB/s"
                     f"{'' if ok else '  INVALID'}")
                if ok and (best is None or ms < best[1]):
                    best = (name, ms)
            except Exception as e:
                self.failures += 1
                note(f"!!! {kernel} {dt} {shape} {name} raised: {type(e).__name__}: {e}")
                note(traceback.format_exc())
                emit(section="triton_validate", kernel=kernel, dtype=dt, case=f"{shape} {name}", ok=False,
                     detail=f"raised {type(e).__name__}: {str(e)[:400]}")
        if best is not None:
            self.record("triton_throughput", kernel, dt, shape, nbytes, best[1], "triton", best[0], True)
        else:
            note(f"!!! {kernel} {dt} {shape}: no valid Triton configuration")

    def torch_ref(self, kernel, dt, shape, nbytes, call, sets):
        try:
            ms = self.time_ms(self.rotating(call, sets))
            tbps = self.record("triton_throughput", kernel, dt, shape, nbytes, ms, "torch")
            note(f"  {kernel:20s} {dt:5s} {shape:28s} {'torch':26s} {ms * 1e3:10.1f} us {tbps:7.3f} TB/s")
        except Exception as e:
            note(f"!!! torch reference for {kernel} {dt} {shape} raised: {type(e).__name__}: {e}")

    def free(self):
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()

    # ---- ceiling ---------------------------------------------------------

    def copy_ceiling(self):
        torch = self.torch
        size = 1 << 30
        src = torch.empty(size, dtype=torch.uint8, device=self.dev)
        src.fill_(1)
        dst = torch.empty_like(src)
        ms = self.time_ms(lambda: dst.copy_(src))
        self.ceiling = 2 * size / (ms * 1e-3) / 1e12
        self.record("triton_throughput", "d2d_copy", "u8", "1GiB", 2 * size, ms, "torch")
        note(f"D2D copy ceiling: {self.ceiling:.3f} TB/s ({ms * 1e3:.1f} us for 2 x 1 GiB)")

    # ---- kernels ---------------------------------------------------------

    def vector_add(self, dt):
        torch, triton, K = self.torch, self.triton, self.k["vector_add"].vector_add
        T = self.tdt[dt]
        n = (1 << 28) if dt == "f32" else (1 << 29)
        shape = f"n={n}"
        sets = [(torch.randn(n, device=self.dev, dtype=T), torch.randn(n, device=self.dev, dtype=T),
                 torch.empty(n, device=self.dev, dtype=T)) for _ in range(self.args.sets)]
        ref = (sets[0][0].float() + sets[0][1].float()).to(T)
        nbytes = 3 * n * self.esize(dt)

        def make_launch(cex, nw):
            grid = (triton.cdiv(n, cex["BLOCK"]),)
            return lambda x, y, o: K[grid](x, y, o, n, num_warps=nw, **cex)

        def check(s):
            ok = torch.equal(s[2], ref)
            return ok, "bit-exact" if ok else f"{int((s[2] != ref).sum())} elements differ"

        self.sweep("vector_add", dt, shape, nbytes, vector_add_configs(dt), make_launch, sets, check,
                   lambda s: s[2].fill_(float("nan")))
        self.torch_ref("vector_add", dt, shape, nbytes, lambda x, y, o: torch.add(x, y, out=o), sets)

    def giou_reference(self, p, t):
        p = p.double()
        t = t.double()
        area_p = (p[:, 2] - p[:, 0]) * (p[:, 3] - p[:, 1])
        area_t = (t[:, 2] - t[:, 0]) * (t[:, 3] - t[:, 1])
        iw = (self.torch.minimum(p[:, 2], t[:, 2]) - self.torch.maximum(p[:, 0], t[:, 0])).clamp(min=0)
        ih = (self.torch.minimum(p[:, 3], t[:, 3]) - self.torch.maximum(p[:, 1], t[:, 1])).clamp(min=0)
        inter = iw * ih
        uni = area_p + area_t - inter
        iou = inter / uni.clamp(min=1e-5)
        ew = (self.torch.maximum(p[:, 2], t[:, 2]) - self.torch.minimum(p[:, 0], t[:, 0])).clamp(min=0)
        eh = (self.torch.maximum(p[:, 3], t[:, 3]) - self.torch.minimum(p[:, 1], t[:, 1])).clamp(min=0)
        enclose = ew * eh
        g = iou - (enclose - uni) / enclose.clamp(min=1e-5)
        ok = t[:, 3] > 0
        return self.torch.where(ok, g, self.torch.zeros_like(g)), ok

    def make_boxes(self, nb, T):
        torch = self.torch
        # Well-formed boxes (right >= left, bottom >= top, targets at least
        # 1 x 1) so that union >= 1 and the fp32 kernel vs the float64
        # reference is well conditioned; tops in [-20, 80) so that some
        # targets' bottoms are <= 0 (valid = 0).  Coordinates stay below 256,
        # so rounding to bf16 keeps every box well-formed.
        lt = torch.rand(nb, 2, device=self.dev) * 100 - 20
        wh = torch.rand(nb, 2, device=self.dev) * 40 + 1
        tgt = torch.cat([lt, lt + wh], 1)
        plt = lt + torch.randn(nb, 2, device=self.dev) * 4
        pwh = (wh + torch.randn(nb, 2, device=self.dev) * 4).clamp(min=0)
        pred = torch.cat([plt, plt + pwh], 1)
        return pred.to(T).contiguous(), tgt.to(T).contiguous()

    def giou_tol(self, dt):
        return {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}[dt]

    def giou_loss(self, dt):
        torch, triton, K = self.torch, self.triton, self.k["giou_loss"].giou_loss_fwd
        T = self.tdt[dt]
        nb = 1 << 24
        shape = f"B={nb}"
        sets = []
        for _ in range(self.args.sets):
            p, t = self.make_boxes(nb, T)
            sets.append((p, t, torch.empty(nb, device=self.dev, dtype=T),
                         torch.empty(nb, device=self.dev, dtype=torch.bool)))
        ref_g, ref_v = self.giou_reference(sets[0][0], sets[0][1])
        nbytes = 2 * nb * 4 * self.esize(dt) + nb * self.esize(dt) + nb
        tol = self.giou_tol(dt)

        def make_launch(cex, nw):
            grid = (triton.cdiv(nb, cex["BLOCK"]),)
            return lambda p, t, g, v: K[grid](p, t, g, v.view(torch.uint8), nb, num_warps=nw, **cex)

        def check(s):
            ok, detail = self.close(s[2], ref_g, rtol=tol, atol=tol)
            vok = torch.equal(s[3], ref_v)
            return ok and vok, detail + ("" if vok else "; valid mask differs")

        self.sweep("giou_loss", dt, shape, nbytes, giou_configs(dt), make_launch, sets, check,
                   lambda s: (s[2].fill_(float("nan")), s[3].view(torch.uint8).fill_(7)))

    def attention_mask_fill(self, dt, q, kv, nreq=64, causal=True):
        torch, triton, K = self.torch, self.triton, self.k["attention_mask_fill"].attention_mask_fill
        T = self.tdt[dt]
        shape = f"{nreq}x{q}x{kv},{'causal' if causal else 'full'}"
        ql = torch.full((nreq,), q, dtype=torch.int32, device=self.dev)
        kl = torch.full((nreq,), kv, dtype=torch.int32, device=self.dev)
        offs = torch.arange(nreq, dtype=torch.int64, device=self.dev) * (q * kv)
        total = nreq * q * kv
        sets = [(torch.empty(total, device=self.dev, dtype=T),) for _ in range(self.args.sets)]
        qi = torch.arange(q, device=self.dev)[:, None]
        ki = torch.arange(kv, device=self.dev)[None, :]
        allowed = (ki <= kv - q + qi) if causal else torch.ones(q, kv, dtype=torch.bool, device=self.dev)
        ref = torch.zeros(q, kv, device=self.dev).masked_fill_(~allowed, float("-inf")).to(T)
        nbytes = total * self.esize(dt) + nreq * (4 + 4 + 8)

        def make_launch(cex, nw):
            grid = (triton.cdiv(q * kv, cex["TILE"]), min(nreq, 65535))
            return lambda m: K[grid](ql, kl, offs, m, nreq, q, kv, CAUSAL=causal, num_warps=nw, **cex)

        def check(s):
            got = s[0].view(nreq, q, kv)
            if bool((got == ref[None]).all()):
                return True, "exact"
            bad = (got != ref[None]).nonzero()
            return False, f"{bad.shape[0]} elements differ; first at {bad[:4].tolist()}"

        self.sweep("attention_mask_fill", dt, shape, nbytes, mask_configs(dt), make_launch, sets, check,
                   lambda s: s[0].fill_(7.0))

    def softmax_tol(self, dt):
        return {"f32": (1e-4, 1e-9), "f16": (2e-3, 1e-7), "bf16": (1e-2, 1e-9)}[dt]

    def softmax(self, dt, rows, cols):
        torch, K = self.torch, self.k["softmax"].softmax
        T = self.tdt[dt]
        shape = f"{rows}x{cols}"
        sets = [((torch.randn(rows, cols, device=self.dev) * 3).to(T), torch.empty(rows, cols, device=self.dev, dtype=T))
                for _ in range(self.args.sets)]
        ref = torch.softmax(sets[0][0].float(), dim=-1)
        nbytes = 2 * rows * cols * self.esize(dt)
        rtol, atol = self.softmax_tol(dt)

        def make_launch(cex, nw):
            return lambda x, y: K[(rows,)](x, y, rows, cols, x.stride(0), y.stride(0), num_warps=nw, **cex)

        def check(s):
            return self.close(s[1], ref, rtol, atol)

        self.sweep("softmax", dt, shape, nbytes, softmax_configs(dt, cols), make_launch, sets, check,
                   lambda s: s[1].fill_(float("nan")))
        self.torch_ref("softmax", dt, shape, nbytes, lambda x, y: torch.softmax(x, dim=-1), sets)

    def ce_reference(self, x, t, ignore_index=-100):
        """float64 loss per row, NaN for out-of-range targets, 0 for ignored."""
        torch = self.torch
        rows, vocab = x.shape
        out = torch.empty(rows, dtype=torch.float64, device=self.dev)
        step = max(1, (1 << 27) // max(vocab, 1))
        for r0 in range(0, rows, step):
            xs = x[r0:r0 + step].double()
            ts = t[r0:r0 + step]
            lse = torch.logsumexp(xs, dim=-1)
            inb = (ts >= 0) & (ts < vocab)
            xt = xs.gather(1, ts.clamp(0, max(vocab - 1, 0))[:, None]).squeeze(1)
            loss = torch.where(inb, lse - xt, torch.full_like(lse, float("nan")))
            loss = torch.where(ts == ignore_index, torch.zeros_like(loss), loss)
            out[r0:r0 + step] = loss
        return out

    def cross_entropy(self, dt, rows, vocab):
        torch, K = self.torch, self.k["cross_entropy"].cross_entropy_fwd
        F = torch.nn.functional
        T = self.tdt[dt]
        shape = f"{rows}x{vocab}"
        sets = [((torch.randn(rows, vocab, device=self.dev) * 3).to(T),
                 torch.randint(0, vocab, (rows,), device=self.dev, dtype=torch.int64),
                 torch.empty(rows, device=self.dev, dtype=torch.float32)) for _ in range(self.args.sets)]
        ref = self.ce_reference(sets[0][0], sets[0][1])
        nbytes = rows * vocab * self.esize(dt) + rows * 8 + rows * 4

        def make_launch(cex, nw):
            return lambda x, t, l: K[(rows,)](x, t, l, rows, vocab, x.stride(0), -100, num_warps=nw, **cex)

        def check(s):
            return self.close(s[2], ref, rtol=1e-5, atol=2e-4)

        self.sweep("cross_entropy", dt, shape, nbytes, ce_configs(dt, vocab), make_launch, sets, check,
                   lambda s: s[2].fill_(float("nan")))
        self.torch_ref("cross_entropy", dt, shape, nbytes,
                       lambda x, t, l: F.cross_entropy(x, t, reduction="none"), sets)

    # ---- small odd shapes ------------------------------------------------

    def edge_cases(self, dt, kernels):
        torch, triton = self.torch, self.triton
        T = self.tdt[dt]
        dev = self.dev
        g = torch.Generator(device="cpu").manual_seed(1234)

        def guard(kernel, case, fn):
            try:
                ok, detail = fn()
            except Exception as e:
                note(traceback.format_exc())
                ok, detail = False, f"raised {type(e).__name__}: {e}"
            self.validated(kernel, dt, "edge: " + case, ok, detail)

        if "vector_add" in kernels:
            K = self.k["vector_add"].vector_add
            for n, off in ((1, 0), (17, 0), (4099, 0), (100003, 1), (65536, 3)):
                def run(n=n, off=off):
                    base = torch.randn(3, n + 8, device=dev).to(T)
                    x, y = base[0, off:off + n], base[1, off:off + n]
                    o = torch.full((n + 8,), 5.0, device=dev, dtype=T)
                    ov = o[off:off + n]
                    blk = 2048 if dt == "f32" else 4096
                    K[(triton.cdiv(n, blk),)](x, y, ov, n, BLOCK=blk, num_warps=4)
                    ok = torch.equal(ov, (x.float() + y.float()).to(T))
                    outside = torch.cat([o[:off], o[off + n:]])
                    ok2 = bool((outside == 5).all())
                    return ok and ok2, ("" if ok else "sum differs ") + ("" if ok2 else "wrote outside")
                guard("vector_add", f"n={n} offset={off}", run)

        if "giou_loss" in kernels:
            K = self.k["giou_loss"].giou_loss_fwd
            for nb, off in ((1, 0), (1001, 0), (4097, 1)):
                def run(nb=nb, off=off):
                    p, t = self.make_boxes(nb + off, T)
                    p, t = p.view(-1)[4 * off:].view(nb, 4), t.view(-1)[4 * off:].view(nb, 4)
                    gbuf = torch.full((nb + 2 * off + 1,), 9.0, device=dev, dtype=T)
                    vbuf = torch.full((nb + 2 * off + 1,), 7, device=dev, dtype=torch.uint8)
                    go, vo = gbuf[off:off + nb], vbuf[off:off + nb]
                    K[(triton.cdiv(nb, 512),)](p, t, go, vo, nb, BLOCK=512, num_warps=4)
                    rg, rv = self.giou_reference(p, t)
                    tol = self.giou_tol(dt)
                    ok, detail = self.close(go, rg, rtol=tol, atol=tol)
                    vok = torch.equal(vo.bool(), rv)
                    outside = bool((gbuf[off + nb:] == 9).all() and (vbuf[off + nb:] == 7).all()
                                   and (gbuf[:off] == 9).all() and (vbuf[:off] == 7).all())
                    return ok and vok and outside, detail + ("" if vok else " valid differs") + (
                        "" if outside else " wrote outside")
                guard("giou_loss", f"B={nb} offset={off}", run)

        if "attention_mask_fill" in kernels:
            K = self.k["attention_mask_fill"].attention_mask_fill
            for causal in (True, False):
                for trial in range(3):
                    def run(causal=causal, trial=trial):
                        nreq = 9
                        qs = torch.randint(-2, 70, (nreq,), generator=g).tolist()
                        ks = torch.randint(-1, 300, (nreq,), generator=g).tolist()
                        qs[0], ks[0] = 5, 64           # aligned block at offset 0
                        qs[1], ks[1] = 300, 3          # many short rows
                        qs[2], ks[2] = 0, 50           # empty
                        if trial == 1:                 # every row 16-byte aligned
                            ks = [max(k, 1) * 8 for k in ks]
                        gaps = torch.randint(0, 5, (nreq,), generator=g).tolist() if trial != 1 else [0] * nreq
                        offs, cur = [], 0
                        for i in range(nreq):
                            cur += gaps[i]
                            offs.append(cur)
                            cur += max(qs[i], 0) * max(ks[i], 0)
                        total = cur + 7
                        m = torch.full((total,), 7.0, device=dev, dtype=T)
                        ref = m.clone()
                        for i in range(nreq):
                            qq, kk = qs[i], ks[i]
                            if qq <= 0 or kk <= 0:
                                continue
                            qi = torch.arange(qq, device=dev)[:, None]
                            ki = torch.arange(kk, device=dev)[None, :]
                            al = (ki <= kk - qq + qi) if causal else torch.ones(qq, kk, dtype=torch.bool, device=dev)
                            ref[offs[i]:offs[i] + qq * kk] = torch.zeros(qq, kk, device=dev).masked_fill_(~al, float("-inf")).to(T).view(-1)
                        qt = torch.tensor(qs, dtype=torch.int32, device=dev)
                        kt = torch.tensor(ks, dtype=torch.int32, device=dev)
                        ot = torch.tensor(offs, dtype=torch.int64, device=dev)
                        mq, mk = max(max(qs), 0), max(max(ks), 0)
                        msgs = []
                        for tile in (4096, 16384):
                            for grid in ((triton.cdiv(mq * mk, tile), nreq), (1, 2)):
                                mm = m.clone()
                                K[grid](qt, kt, ot, mm, nreq, mq, mk, CAUSAL=causal, TILE=tile, num_warps=4)
                                if not torch.equal(mm, ref):
                                    bad = (mm != ref).nonzero().view(-1)[:4].tolist()
                                    msgs.append(f"TILE={tile} grid={grid}: differs at {bad}")
                        return not msgs, "; ".join(msgs)
                    guard("attention_mask_fill", f"ragged {'causal' if causal else 'full'} trial {trial}", run)

        if "softmax" in kernels:
            K = self.k["softmax"].softmax
            rtol, atol = self.softmax_tol(dt)
            for rows, cols, block, nw in ((37, 1, 1024, 4), (37, 1000, 1024, 4), (5, 4096, 4096, 8),
                                          (5, 5000, 4096, 8), (3, 20000, 8192, 16), (3, 20001, 32768, 32)):
                def run(rows=rows, cols=cols, block=block, nw=nw):
                    xb = (torch.randn(rows, cols + 3, device=dev) * 3).to(T)
                    x = xb[:, 1:cols + 1]  # row stride cols + 3, misaligned start
                    x[1 % rows, 0] = float("-inf")
                    if rows > 2:
                        x[2, :] = float("-inf")  # a row of only -inf gives NaN, as in torch
                    yb = torch.full((rows, cols + 5), 9.0, device=dev, dtype=T)
                    y = yb[:, :cols]
                    K[(rows,)](x, y, rows, cols, x.stride(0), y.stride(0), BLOCK=block, num_warps=nw)
                    ref = torch.softmax(x.float(), dim=-1)
                    ok, detail = self.close(y, ref, rtol, atol)
                    ok2 = bool((yb[:, cols:] == 9).all())
                    # In place.
                    z = x.clone()
                    K[(rows,)](z, z, rows, cols, z.stride(0), z.stride(0), BLOCK=block, num_warps=nw)
                    ok3, d3 = self.close(z, ref, rtol, atol)
                    return ok and ok2 and ok3, detail + ("" if ok2 else " wrote outside") + (
                        "" if ok3 else " in-place: " + d3)
                guard("softmax", f"{rows}x{cols} BLOCK={block}", run)

        if "cross_entropy" in kernels:
            K = self.k["cross_entropy"].cross_entropy_fwd
            for rows, vocab, block, nw in ((37, 1, 1024, 4), (37, 1000, 1024, 4), (9, 5003, 2048, 4),
                                           (9, 32000, 4096, 8)):
                def run(rows=rows, vocab=vocab, block=block, nw=nw):
                    xb = (torch.randn(rows, vocab + 3, device=dev) * 3).to(T)
                    x = xb[:, 1:vocab + 1]
                    t = torch.randint(0, vocab, (rows,), device=dev, dtype=torch.int64)
                    t[1] = -100
                    t[2] = vocab
                    t[3] = -1
                    t[4] = vocab - 1
                    lb = torch.full((rows + 3,), 5.0, device=dev, dtype=torch.float32)
                    lo = lb[:rows]
                    K[(rows,)](x, t, lo, rows, vocab, x.stride(0), -100, BLOCK=block, num_warps=nw)
                    ref = self.ce_reference(x, t)
                    ok, detail = self.close(lo, ref, rtol=1e-5, atol=2e-4)
                    ok2 = bool((lb[rows:] == 5).all())
                    return ok and ok2, detail + ("" if ok2 else " wrote outside")
                guard("cross_entropy", f"{rows}x{vocab} BLOCK={block}", run)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--quick", action="store_true", help="only the default configuration of each kernel")
    ap.add_argument("--sets", type=int, default=3, help="rotating input/output sets (>= 3)")
    ap.add_argument("--warmup", type=int, default=25, help="do_bench warmup, ms")
    ap.add_argument("--rep", type=int, default=200, help="do_bench rep, ms")
    ap.add_argument("--no-edge", action="store_true", help="skip the small odd-shape validation")
    ap.add_argument("--match-kpack", metavar="JSONL",
                    help="kpack_throughput_bench's output: also time every Triton configuration it ran")
    args = ap.parse_args()
    kernels = [k for k in args.kernels.split(",") if k]
    dtypes = [d for d in args.dtypes.split(",") if d]
    for k in kernels:
        if k not in KERNELS:
            ap.error(f"unknown kernel {k}")
    for d in dtypes:
        if d not in DTYPES:
            ap.error(f"unknown dtype {d}")
    args.sets = max(args.sets, 3)

    try:
        import torch
    except ImportError as e:
        note(f"torch not importable ({e}): skipping")
        return 77
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        note("no CUDA device: skipping")
        return 77
    import triton
    import triton.testing

    torch.cuda.init()
    props = torch.cuda.get_device_properties(0)
    emit(section="triton_env", device=props.name, sm=f"{props.major}{props.minor}",
         memory_gib=round(props.total_memory / 2**30, 1), torch=torch.__version__, triton=triton.__version__,
         cuda=torch.version.cuda)
    note(f"device {props.name}, torch {torch.__version__}, triton {triton.__version__}")

    b = Bench(args, torch, triton)
    b.copy_ceiling()
    b.free()

    if not args.no_edge:
        for dt in dtypes:
            b.edge_cases(dt, kernels)
            b.free()

    plan = []
    for dt in dtypes:
        if "vector_add" in kernels:
            plan.append(("vector_add", dt, lambda dt=dt: b.vector_add(dt)))
        if "giou_loss" in kernels:
            plan.append(("giou_loss", dt, lambda dt=dt: b.giou_loss(dt)))
        if "attention_mask_fill" in kernels and dt == "f16":
            plan.append(("attention_mask_fill", dt, lambda dt=dt: b.attention_mask_fill(dt, 2048, 2048)))
            plan.append(("attention_mask_fill", dt, lambda dt=dt: b.attention_mask_fill(dt, 2047, 2047)))
        if "softmax" in kernels:
            plan.append(("softmax", dt, lambda dt=dt: b.softmax(dt, 32768, 4096)))
            plan.append(("softmax", dt, lambda dt=dt: b.softmax(dt, 4096, 32768)))
            plan.append(("softmax", dt, lambda dt=dt: b.softmax(dt, 4096, 50257)))
        if "cross_entropy" in kernels:
            plan.append(("cross_entropy", dt, lambda dt=dt: b.cross_entropy(dt, 16384, 32000)))
            plan.append(("cross_entropy", dt, lambda dt=dt: b.cross_entropy(dt, 4096, 128256)))
            plan.append(("cross_entropy", dt, lambda dt=dt: b.cross_entropy(dt, 4096, 50257)))
    for name, dt, fn in plan:
        try:
            fn()
        except Exception as e:
            b.failures += 1
            note(f"!!! {name} {dt} raised: {type(e).__name__}: {e}")
            note(traceback.format_exc())
        try:
            b.free()  # the method's tensors died with its frame
        except Exception as e:
            note(f"!!! freeing after {name} {dt}: {e}")

    if b.failures:
        note(f"!!! {b.failures} validation failure(s) or error(s); see the triton_validate lines")
        return 1
    note("all validations passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
