"""giou_loss forward in Triton.

Triton counterpart of templates/giou_loss.cuh (manifests/giou_loss.yaml).

    giou_loss_fwd(preds, targets, giou, valid, num_boxes, BLOCK: constexpr)

  preds, targets  *T  [num_boxes, 4] contiguous boxes (left, top, right, bottom);
                      T = f32, f16 or bf16
  giou            *T  [num_boxes]
  valid           *u8 [num_boxes]  1 where the target's bottom > 0, else 0
                      (torch.bool layout; pass a uint8 view of a bool tensor)
  num_boxes       i64 B * N
  BLOCK           constexpr int: boxes per program, a power of two

Launch: grid = (cdiv(num_boxes, BLOCK),); num_warps 4 (BLOCK 512 f32 /
1024 f16 gives each thread 4 x 16-byte loads of each input).

Per box, in fp32 (p = prediction, t = target):
  area_p  = (p.r - p.l) * (p.b - p.t)            area_t likewise
  inter   = max(min(p.r,t.r) - max(p.l,t.l), 0) * max(min(p.b,t.b) - max(p.t,t.t), 0)
  union   = area_p + area_t - inter
  iou     = inter / max(union, 1e-5)
  enclose = max(max(p.r,t.r) - min(p.l,t.l), 0) * max(max(p.b,t.b) - min(p.t,t.t), 0)
  giou    = iou - (enclose - union) / max(enclose, 1e-5)
  out     = t.b > 0 ? giou : 0,  valid = t.b > 0
tl.maximum / tl.minimum ignore NaN (PTX max/min), like fmaxf/fminf.

The boxes are loaded as one flat [4 * BLOCK] tile per input (contiguous, so
16-byte vectors when the pointers are 16-byte aligned) and taken apart with
reshape + split, which stays in registers.  All programs but the last are
unmasked.
"""
import triton
import triton.language as tl


@triton.jit
def _giou_math(p, t, BLOCK: tl.constexpr):
    # p, t: [BLOCK * 4] fp32, box-major.  Returns (giou [BLOCK] fp32, ok [BLOCK] i1).
    pl_r, pt_b = tl.split(tl.reshape(p, [BLOCK, 2, 2]))  # (l, r), (t, b)
    tl_r, tt_b = tl.split(tl.reshape(t, [BLOCK, 2, 2]))
    p_l, p_r = tl.split(pl_r)
    p_t, p_b = tl.split(pt_b)
    t_l, t_r = tl.split(tl_r)
    t_t, t_b = tl.split(tt_b)
    area_p = (p_r - p_l) * (p_b - p_t)
    area_t = (t_r - t_l) * (t_b - t_t)
    iw = tl.maximum(tl.minimum(p_r, t_r) - tl.maximum(p_l, t_l), 0.0)
    ih = tl.maximum(tl.minimum(p_b, t_b) - tl.maximum(p_t, t_t), 0.0)
    inter = iw * ih
    uni = area_p + area_t - inter
    iou = inter / tl.maximum(uni, 1e-5)
    ew = tl.maximum(tl.maximum(p_r, t_r) - tl.minimum(p_l, t_l), 0.0)
    eh = tl.maximum(tl.maximum(p_b, t_b) - tl.minimum(p_t, t_t), 0.0)
    enclose = ew * eh
    g = iou - (enclose - uni) / tl.maximum(enclose, 1e-5)
    ok = t_b > 0.0
    return tl.where(ok, g, 0.0), ok


@triton.jit
def giou_loss_fwd(preds, targets, giou, valid, num_boxes, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    coords = tl.arange(0, 4 * BLOCK)
    boxes = tl.arange(0, BLOCK)
    pb = preds + start * 4
    tb = targets + start * 4
    gb = giou + start
    vb = valid + start
    if start + BLOCK <= num_boxes:
        p = tl.load(pb + coords).to(tl.float32)
        t = tl.load(tb + coords).to(tl.float32)
        g, ok = _giou_math(p, t, BLOCK)
        tl.store(gb + boxes, g.to(giou.dtype.element_ty))
        tl.store(vb + boxes, ok.to(tl.uint8))
    else:
        rem = num_boxes - start
        cm = coords < rem * 4
        p = tl.load(pb + coords, mask=cm, other=0.0).to(tl.float32)
        t = tl.load(tb + coords, mask=cm, other=0.0).to(tl.float32)
        g, ok = _giou_math(p, t, BLOCK)
        bm = boxes < rem
        tl.store(gb + boxes, g.to(giou.dtype.element_ty), mask=bm)
        tl.store(vb + boxes, ok.to(tl.uint8), mask=bm)
