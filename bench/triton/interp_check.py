#!/usr/bin/env python3
"""CPU-only semantic check of the Triton kernels in templates/triton/ with
Triton's interpreter (TRITON_INTERPRET=1): no GPU, no torch.

Runs every kernel in f32 and f16 on small, odd cases and compares with
numpy references:
- sizes that are not multiples of the block;
- ragged masks with gaps, empty requests, short rows, aligned and unaligned
  blocks, and grids smaller than the work;
- rows longer than BLOCK (the two-pass softmax), in-place softmax, -inf rows;
- ignore_index and out-of-range targets.
It also checks that nothing outside the outputs is written.  It checks
semantics only: the interpreter does not run the compiled code, so
vectorization and alignment are not tested here (aot_compile_check.py
covers compilation; triton_throughput.py validates on the GPU).

Needs numpy < 2 (the 3.6 interpreter turns 1-element arrays into Python
ints).  The interpreter wants torch tensors; a minimal stand-in over numpy
arrays (data_ptr, dtype, untyped_storage, ...) takes their place.  Each
kernel and dtype runs in its own process.

    python3 bench/triton/interp_check.py            # everything (a few minutes)
    python3 bench/triton/interp_check.py softmax f16
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in templates/triton
HERE = os.path.dirname(os.path.abspath(__file__))
KDIR = os.path.normpath(os.path.join(HERE, "..", "..", "templates", "triton"))
CASES = [(k, d) for k in ("vector_add", "giou", "mask", "softmax", "ce") for d in ("f32", "f16")]


def fake_tensor_factory(np):
    """FT(array) -> an object the 3.6 interpreter accepts as a tensor."""

    class Storage:
        def __init__(self, arr):
            self.arr = arr

        def data_ptr(self):
            return self.arr.ctypes.data

        def cpu(self):
            return self

        def copy_(self, other):
            pass

    names = {np.float32: "float32", np.float16: "float16", np.int64: "int64", np.int32: "int32",
             np.uint8: "uint8"}
    dtypes = {}  # one dtype object per name, like torch's singletons
    keep = []    # the interpreter caches by object identity: keep everything alive

    class DType:
        __module__ = "torch"

        def __init__(self, name):
            self.name = name

        def __str__(self):
            return "torch." + self.name

        __repr__ = __str__

    class FT:
        def __init__(self, arr, name, storage=None, offset=0):
            self.arr = arr
            self.storage = storage or Storage(arr)
            self.offset = offset
            self.dtype = dtypes.setdefault(name, DType(name))
            keep.append(self)

        def data_ptr(self):
            return self.storage.data_ptr() + self.offset * self.arr.itemsize

        def untyped_storage(self):
            return self.storage

        def storage_offset(self):
            return self.offset

        def size(self):
            return (self.arr.size - self.offset,)

        def stride(self):
            return (1,)

        def new_empty(self, *a, **k):
            return FT(self.arr, self.dtype.name, self.storage, self.offset)

        def set_(self, storage, offset, size, stride):
            self.storage, self.offset = storage, offset
            return self

        def copy_(self, other):
            pass

    def make(arr):
        keep.append(arr)
        return FT(arr, names[arr.dtype.type])

    return make


def run_case(kern, dt):
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, KDIR)
    import numpy as np
    import triton
    FT = fake_tensor_factory(np)
    T = {"f32": np.float32, "f16": np.float16}[dt]
    rng = np.random.default_rng(1)
    fails = [0]

    def check(cond, *msg):
        if not cond:
            fails[0] += 1
            print("FAIL", kern, dt, *msg, flush=True)

    if kern == "vector_add":
        from vector_add import vector_add
        for n in (1, 7, 1000, 4096, 4099):
            x = rng.standard_normal(n).astype(T)
            y = rng.standard_normal(n).astype(T)
            o = np.full(n + 3, 7, T)
            vector_add[(triton.cdiv(n, 1024),)](FT(x), FT(y), FT(o), n, BLOCK=1024)
            check(np.array_equal(o[:n], (x.astype(np.float32) + y.astype(np.float32)).astype(T)), n)
            check((o[n:] == 7).all(), n, "oob write")
    elif kern == "giou":
        from giou_loss import giou_loss_fwd
        def ref(p, t):
            p = p.astype(np.float64); t = t.astype(np.float64)
            ap = (p[:,2]-p[:,0])*(p[:,3]-p[:,1]); at = (t[:,2]-t[:,0])*(t[:,3]-t[:,1])
            iw = np.maximum(np.minimum(p[:,2],t[:,2]) - np.maximum(p[:,0],t[:,0]), 0)
            ih = np.maximum(np.minimum(p[:,3],t[:,3]) - np.maximum(p[:,1],t[:,1]), 0)
            inter = iw*ih; uni = ap+at-inter; iou = inter/np.maximum(uni,1e-5)
            ew = np.maximum(np.maximum(p[:,2],t[:,2]) - np.minimum(p[:,0],t[:,0]), 0)
            eh = np.maximum(np.maximum(p[:,3],t[:,3]) - np.minimum(p[:,1],t[:,1]), 0)
            enc = ew*eh; g = iou - (enc-uni)/np.maximum(enc,1e-5)
            ok = t[:,3] > 0
            return np.where(ok, g, 0), ok.astype(np.uint8)
        for nb in (1, 3, 64, 65, 200, 256):
            def boxes():
                lt = rng.uniform(-30, 100, (nb, 2)); wh = rng.uniform(0, 50, (nb, 2))
                return np.concatenate([lt, lt + wh], 1).astype(T)
            t = boxes(); p = (t.astype(np.float64) + rng.normal(0, 5, (nb, 4))).astype(T)
            g = np.full(nb + 5, 9, T); v = np.full(nb + 5, 7, np.uint8)
            giou_loss_fwd[(triton.cdiv(nb, 64),)](FT(p.ravel()), FT(t.ravel()), FT(g), FT(v), nb, BLOCK=64)
            rg, rv = ref(p, t)
            tol = 1e-5 if dt == "f32" else 2e-3
            check(np.allclose(g[:nb].astype(np.float64), rg, rtol=tol, atol=tol), nb, np.abs(g[:nb]-rg).max())
            check(np.array_equal(v[:nb], rv), nb, "valid")
            check((g[nb:] == 9).all() and (v[nb:] == 7).all(), nb, "oob write")

    elif kern == "mask":
        from attention_mask_fill import attention_mask_fill
        VEC = 16 // np.dtype(T).itemsize
        for causal in (True, False):
            for TILE in (256, 1024):
                for trial in range(3):
                    nreq = 7
                    ql = rng.integers(-2, 20, nreq).astype(np.int32)
                    kl = rng.integers(-1, 40, nreq).astype(np.int32)
                    if trial == 1:  # aligned rows
                        kl = (np.maximum(kl, 1) * VEC).astype(np.int32) // 2 * 2
                        kl = (kl // VEC * VEC).astype(np.int32)
                    ql[0] = 5; kl[0] = 3 * VEC  # one aligned, at offset 0
                    ql[1] = 300; kl[1] = 2       # more rows than one tile, short rows
                    sizes = np.maximum(ql, 0).astype(np.int64) * np.maximum(kl, 0)
                    gaps = rng.integers(0, 3, nreq) * (0 if trial == 1 else 1) * (VEC if trial == 2 else 1)
                    offs = np.zeros(nreq, np.int64)
                    cur = 0
                    for i in range(nreq):
                        cur += gaps[i]; offs[i] = cur; cur += sizes[i]
                    total = int(cur) + 5
                    m = np.full(total, 3, T)
                    exp = m.copy()
                    for i in range(nreq):
                        if ql[i] <= 0 or kl[i] <= 0: continue
                        q = np.arange(ql[i])[:, None]; k = np.arange(kl[i])[None, :]
                        allowed = (k <= kl[i] - ql[i] + q) if causal else np.ones((ql[i], kl[i]), bool)
                        exp[offs[i]:offs[i] + sizes[i]] = np.where(allowed, 0, -np.inf).astype(T).ravel()
                    mq, mk = int(max(ql.max(), 0)), int(max(kl.max(), 0))
                    for grid in ((triton.cdiv(mq * mk, TILE), min(nreq, 65535)), (1, 2)):
                        mm = m.copy()
                        attention_mask_fill[grid](FT(ql), FT(kl), FT(offs), FT(mm), nreq, mq, mk, CAUSAL=causal, TILE=TILE)
                        check(np.array_equal(mm, exp), causal, TILE, trial, grid, np.nonzero(mm != exp)[0][:10])

    elif kern == "softmax":
        from softmax import softmax
        def ref(x):
            x = x.astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                m = x.max(1, keepdims=True); e = np.exp(x - m); return e / e.sum(1, keepdims=True)
        for BLOCK in (64, 256):
            for cols in (1, 5, 63, 64, 65, 200, 256, 300):
                rows = 6
                stride = cols + 3
                x = (rng.normal(0, 3, (rows, stride))).astype(T)
                x[1, 0] = -np.inf
                x[2, :] = -np.inf
                xin = x.copy()
                y = np.full((rows, stride + 2), 9, T)
                for grid in ((rows,), (rows + 3,)):
                    y[:] = 9
                    softmax[grid](FT(x.ravel()), FT(y.ravel()), rows, cols, stride, stride + 2, BLOCK=BLOCK)
                    r = ref(x[:, :cols])
                    tol = 2e-5 if dt == "f32" else 1e-3
                    got = y[:, :cols].astype(np.float64)
                    same = np.isclose(got, r, rtol=tol, atol=1e-7 if dt == "f16" else 1e-9) | (np.isnan(got) & np.isnan(r))
                    check(same.all(), BLOCK, cols, grid, np.argwhere(~same)[:5])
                    check((y[:, cols:] == 9).all(), BLOCK, cols, "oob")
                # in place
                z = xin.copy()
                softmax[(rows,)](FT(z.ravel()), FT(z.ravel()), rows, cols, stride, stride, BLOCK=BLOCK)
                got = z[:, :cols].astype(np.float64)
                same = np.isclose(got, ref(xin[:, :cols]), rtol=tol, atol=1e-7 if dt == "f16" else 1e-9) | (np.isnan(got) & np.isnan(ref(xin[:, :cols])))
                check(same.all(), "inplace", BLOCK, cols)
                check(np.array_equal(z[:, cols:], xin[:, cols:]), "inplace oob", BLOCK, cols)

    elif kern == "ce":
        from cross_entropy import cross_entropy_fwd
        for BLOCK in (64, 256):
            for V in (1, 5, 64, 65, 200, 256, 300):
                rows = 9
                stride = V + 1
                x = rng.normal(0, 3, (rows, stride)).astype(T)
                t = rng.integers(0, V, rows).astype(np.int64)
                t[1] = -100; t[2] = V; t[3] = -1; t[4] = V - 1; t[5] = 0
                x[6, :] = -np.inf if V > 0 else 0
                loss = np.full(rows + 2, 5, np.float32)
                for grid in ((rows,), (rows + 3,)):
                    loss[:] = 5
                    cross_entropy_fwd[grid](FT(x.ravel()), FT(t), FT(loss), rows, V, stride, -100, BLOCK=BLOCK)
                    xd = x[:, :V].astype(np.float64)
                    with np.errstate(invalid="ignore", divide="ignore"):
                        m = xd.max(1); lse = m + np.log(np.exp(xd - m[:, None]).sum(1))
                        exp = np.array([0.0 if t[i] == -100 else (np.nan if not (0 <= t[i] < V) else lse[i] - xd[i, t[i]]) for i in range(rows)])
                    got = loss[:rows].astype(np.float64)
                    same = np.isclose(got, exp, rtol=1e-5, atol=1e-5) | (np.isnan(got) & np.isnan(exp))
                    check(same.all(), BLOCK, V, grid, got, exp)
                    check((loss[rows:] == 5).all(), "oob")
    return fails[0]


def main():
    if len(sys.argv) == 3:
        n = run_case(sys.argv[1], sys.argv[2])
        print(f"fails {n} {sys.argv[1]} {sys.argv[2]}", flush=True)
        return 1 if n else 0
    try:
        import numpy
    except ImportError:
        print("numpy not importable: skipping", file=sys.stderr)
        return 77
    if int(numpy.__version__.split(".")[0]) >= 2:
        print(f"numpy {numpy.__version__}: the Triton 3.6 interpreter needs numpy < 2", file=sys.stderr)
        return 77
    bad = 0
    for k, d in CASES:
        p = subprocess.run([sys.executable, "-W", "ignore", __file__, k, d], capture_output=True, text=True)
        out = (p.stdout + p.stderr).strip().splitlines()
        print(f"{k:12s} {d}: {'ok' if p.returncode == 0 else 'FAILED'}", flush=True)
        if p.returncode != 0:
            bad += 1
            print("\n".join(out[-20:]), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
