#!/usr/bin/env python3
"""How close the auto dispatcher's pick is to the best built specialization
on shapes that were NOT tuned (issue 16's quality goal), from one run of the
tuning harness in --eval mode on the device, plus (optional) what Triton's
own @autotune picked for the Triton twins at the same shapes.

    python3 bench/tune/quality.py EVAL.jsonl TUNING.yaml [AUTOTUNE.jsonl] > quality.md

EVAL.jsonl: the harness's "eval" lines: at each untuned shape, the median
time of every valid candidate and of the auto dispatcher ("auto"), all in
one process on one GPU.  TUNING.yaml: the tuning file the library was built
with; its grid gives each kernel's fixed "reasonable default": the single
candidate with the best geometric mean over the tuned shapes (a strong
default, chosen with hindsight of the whole grid).  AUTOTUNE.jsonl:
bench/tune/triton_autotune.py's lines; the time of Triton's pick is taken
from the harness's own measurement of that candidate at that shape.

Ratios are time / best time (>= 1; 1.00 = the best built).  Prints a
markdown table per kernel and a summary; exit 1 when an input is missing.
"""
import json
import math
import sys
from collections import defaultdict


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def load_eval(path):
    # (kernel, combo, shape key) -> {candidate: us}
    cells = defaultdict(dict)
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            rec = json.loads(line).get("eval")
            if not rec:
                continue
            shape = tuple(sorted(rec["key"].items()))
            cells[(rec["kernel"], rec["combo"], shape)][rec["candidate"]] = rec["us"]
    return cells


def load_defaults(path):
    """kernel -> combo -> the candidate with the best geomean of time/best
    over the tuning file's shapes (minimal YAML reading: the file's flow-map
    result lines are JSON-like)."""
    import yaml  # PyYAML: present wherever torch is
    with open(path) as f:
        doc = yaml.safe_load(f)
    out = {}
    for k in doc.get("kernels", []):
        per = {}
        for table in k.get("tables", []):
            combo = " ".join("%s=%s" % (n, str(v).lower() if isinstance(v, bool) else v)
                             for n, v in (table.get("for") or {}).items())
            ratios = defaultdict(list)
            for res in table.get("results", []):
                us = res.get("us") or {}
                if not us:
                    continue
                best = min(us.values())
                for cand, t in us.items():
                    ratios[cand].append(t / best)
            n = max((len(v) for v in ratios.values()), default=0)
            full = {c: geomean(v) for c, v in ratios.items() if len(v) == n}
            if full:
                per[combo] = min(full, key=full.get)
        out[k["kernel"]] = per
    return out


def load_autotune(path):
    picks = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rec = json.loads(line)
                shape = tuple(sorted(rec["shape"].items()))
                picks[(rec["kernel"], rec["combo"], shape)] = rec
    return picks


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 1
    cells = load_eval(sys.argv[1])
    defaults = load_defaults(sys.argv[2])
    picks = load_autotune(sys.argv[3]) if len(sys.argv) == 4 else {}
    by_kernel = defaultdict(list)
    for (kernel, combo, shape), times in sorted(cells.items()):
        by_kernel[kernel].append((combo, shape, times))
    all_auto, all_default, all_triton = [], [], []
    aligned_by_kernel = {}
    print("| kernel | shapes | auto/best geomean | auto/best worst (shape) | default | default/best geomean | "
          "default/best worst | Triton autotune pick/best geomean | auto/Triton pick geomean |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kernel, rows in by_kernel.items():
        auto, default, triton, auto_vs_triton = [], [], [], []
        worst = (0, None)
        names = set()
        for combo, shape, times in rows:
            cands = {c: t for c, t in times.items() if c != "auto"}
            if "auto" not in times or not cands:
                continue
            best = min(cands.values())
            r = times["auto"] / best
            auto.append(r)
            if r > worst[0]:
                worst = (r, "%s %s" % (combo, " ".join("%s=%d" % kv for kv in shape)))
            d = defaults.get(kernel, {}).get(combo)
            if d and d in cands:
                default.append(cands[d] / best)
                names.add(d)
            p = picks.get((kernel, combo, shape))
            if p and p["picked"] in cands:
                triton.append(cands[p["picked"]] / best)
                auto_vs_triton.append(times["auto"] / cands[p["picked"]])
        aligned = [times["auto"] / min(t for c, t in times.items() if c != "auto")
                   for combo, shape, times in rows
                   if "auto" in times and len(times) > 1 and all(v % 16 == 0 for _, v in shape)]
        aligned_by_kernel[kernel] = aligned
        all_auto += auto
        all_default += default
        all_triton += auto_vs_triton
        fmt = lambda xs: "%.3f" % geomean(xs) if xs else "-"
        print("| %s | %d | %s | %.3f (%s) | %s | %s | %s | %s | %s |" % (
            kernel, len(auto), fmt(auto), worst[0], worst[1], "; ".join(sorted(names)) or "-", fmt(default),
            "%.3f" % max(default) if default else "-", fmt(triton), fmt(auto_vs_triton)))
    print()
    print("At the untuned shapes whose key values are all multiples of 16 (where a Triton kernel's "
          "launcher runs its aligned variant, with aligned buffers):")
    print()
    print("| kernel | shapes | auto/best geomean | worst |")
    print("|---|---|---|---|")
    for kernel, xs in aligned_by_kernel.items():
        if xs:
            print("| %s | %d | %.3f | %.3f |" % (kernel, len(xs), geomean(xs), max(xs)))
    print()
    print("All kernels: %d untuned shapes; auto/best geomean %.3f, worst %.3f (above 1.10: %d, above 1.05: %d); "
          "fixed default/best geomean %.3f, worst %.3f%s" %
          (len(all_auto), geomean(all_auto), max(all_auto, default=float("nan")),
           sum(1 for x in all_auto if x > 1.10), sum(1 for x in all_auto if x > 1.05),
                             geomean(all_default), max(all_default, default=float("nan")),
                             "; auto/Triton autotune's pick geomean %.3f" % geomean(all_triton) if all_triton else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
