"""Turns one bench/run.sh output folder into the table of ratios.

    python3 bench/report.py OUT_DIR > report.md

Every number in the table comes from the same run: kpack against the raw
driver, against CUDA's <<<>>>, against Triton, and against the measured
device-to-device copy ceiling.  Missing inputs are reported, not guessed.
"""
import json
import os
import re
import statistics
import sys


def load(folder, name):
    rows = []
    path = os.path.join(folder, name + ".jsonl")
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return rows


def find(rows, section, name):
    for r in rows:
        if r.get("section") == section and r.get("name") == name:
            return r
    return None


def fmt(x, digits=2):
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def verdict(ok):
    return "" if ok is None else ("met" if ok else "**missed**")


def launch_section(launch, jit, out):
    out.append("## 1-2. Launch host cost and dispatcher cost (median per launch)\n")
    out.append("| variant | ns/launch | ratio to raw cuLaunchKernel | goal |")
    out.append("| --- | --- | --- | --- |")
    raw = find(launch, "launch", "raw_cuLaunchKernel")
    ratios = {
        "kpack_typed": find(launch, "launch_ratio", "kpack_typed_over_raw"),
        "kpack_dispatcher": find(launch, "launch_ratio", "kpack_dispatcher_over_raw"),
        "cuda_chevrons": find(launch, "launch_ratio", "cuda_chevrons_over_raw"),
    }
    for name in ["raw_cuLaunchKernel", "kpack_typed", "kpack_dispatcher", "cuda_chevrons", "cuda_chevrons_checked"]:
        r = find(launch, "launch", name)
        ratio = ratios.get(name)
        goal = ""
        if name == "kpack_typed" and ratio:
            goal = "<= 1.03x: " + verdict(ratio["value"] <= 1.03)
        out.append(f"| {name} | {fmt(r and r['value'], 0)} | "
                   f"{fmt(ratio and ratio['value'], 3) if name != 'raw_cuLaunchKernel' else '1.000'} | {goal} |")
    d = find(launch, "dispatch", "dispatcher_minus_typed")
    out.append(f"\nDispatcher minus typed launcher: **{fmt(d and d['value'], 1)} ns** "
               f"(goal <= 30 ns: {verdict(d['value'] <= 30) if d else 'n/a'}).")
    warm = find(jit, "triton_jit", "warm_call_host")
    add = find(jit, "triton_jit", "torch_add_host")
    typed = find(launch, "launch", "kpack_typed")
    if warm and typed:
        warm_ns = warm["value"] * (1000.0 if warm.get("unit") == "us" else 1.0)
        out.append(f"Triton's warm (cached) call: {fmt(warm['value'])} {warm.get('unit')} of host time, "
                   f"{fmt(warm_ns / typed['value'], 1)}x kpack's typed launch.")
    if add and typed:
        add_ns = add["value"] * (1000.0 if add.get("unit") == "us" else 1.0)
        out.append(f"torch.add: {fmt(add['value'])} {add.get('unit')} ({fmt(add_ns / typed['value'], 1)}x kpack).")
    out.append("")


def cold_section(launch, jit, out):
    out.append("## 3. Cold first launch (fresh process, context already created)\n")
    out.append("| path | time | ratio to bare cuLibraryLoadData + launch | minor page faults in the timed region |")
    out.append("| --- | --- | --- | --- |")
    raw = find(launch, "cold", "raw_first_launch")
    for name in ["raw_first_launch", "kpack_first_launch", "cuda_chevrons_first_launch",
                 "kpack_first_launch_prefaulted", "kpack_first_launch_driver_warm",
                 "kpack_first_launch_driver_api_warm", "raw_first_launch_no_prelude",
                 "kpack_first_launch_after_init", "raw_first_launch_preserved"]:
        r = find(launch, "cold", name)
        ratio = (r["value"] / raw["value"]) if (r and raw and raw["value"]) else None
        faults = r and r.get("median_minor_faults")
        out.append(f"| {name} | {fmt(r and r['value'], 1)} us | {fmt(ratio, 2)} | {fmt(faults, 0)} |")
    pair = find(launch, "cold_ratio", "kpack_over_raw")
    if pair:
        out.append(f"\nkpack / raw, paired by run: **{fmt(pair['value'], 2)}x** "
                   f"(goal <= 1.2x: {verdict(pair['value'] <= 1.2)}).")
    for name, label in [("kpack_prefaulted_over_raw", "with the embedded fatbin's pages touched first"),
                        ("kpack_driver_warm_over_raw", "with the driver already found (a second specialization)"),
                        ("kpack_driver_api_warm_over_raw",
                         "after the raw variant's prelude (cuInit + cuCtxGetCurrent through the driver API)"),
                        ("kpack_over_raw_no_prelude",
                         "against the raw path without that prelude (dlopen + dlsym only)"),
                        ("kpack_after_init_over_raw",
                         "after kpack_init() at start-up (the driver found before the clock, as the raw path's)"),
                        ("kpack_over_raw_preserved",
                         "against the raw path with CU_LIBRARY_BINARY_IS_PRESERVED, as kpack loads"),
                        ("raw_preserved_over_raw", "(raw with that option / raw without it)")]:
        r = find(launch, "cold_ratio", name)
        if r:
            out.append(f"- kpack / raw {label}: {fmt(r['value'], 2)}x")
    init = find(launch, "cold", "kpack_first_launch_after_init")
    if init and init.get("median_init_us") is not None:
        out.append(f"- kpack_init() itself, outside that clock: {fmt(init['median_init_us'], 1)} us median")
    for name, label in [("first_call_fresh_cache", "Triton, first call in a process, fresh cache"),
                        ("new_constexpr_fresh_cache", "Triton, first call for a new constexpr value, fresh cache"),
                        ("first_call_warm_disk_cache", "Triton, first call in a process, warm disk cache"),
                        ("new_constexpr_warm_disk_cache",
                         "Triton, first call for a new constexpr value, warm disk cache")]:
        r = find(jit, "triton_jit", name)
        if r:
            kp = find(launch, "cold", "kpack_first_launch")
            unit = r.get("unit", "ms")
            value_us = r["value"] * (1000.0 if unit == "ms" else 1.0)
            ratio = f" ({fmt(value_us / kp['value'], 0)}x kpack's cold launch)" if kp else ""
            out.append(f"- {label}: {fmt(r['value'], 1)} {unit} median (min {fmt(r.get('min'), 1)}, "
                       f"max {fmt(r.get('max'), 1)}){ratio}")
    out.append("")


def shape_key(shape):
    """The numbers of a shape label, so "rows=32768 cols=4096" (kpack) and
    "32768x4096" (Triton) pair up; comments in parentheses are dropped and
    repeated numbers folded ("64x2048x2048" -> 64, 2048)."""
    numbers = re.findall(r"\d+", re.sub(r"\(.*?\)", "", shape or ""))
    folded = [n for i, n in enumerate(numbers) if i == 0 or n != numbers[i - 1]]
    return tuple(int(n) for n in folded)


def variant_of(r):
    if r.get("variant"):
        return r["variant"]
    m = re.search(r",(causal|nocausal)$", r.get("shape", ""))
    return m.group(1) if m else ""


def throughput_section(tput, ttput, out):
    out.append("## 4. Kernel throughput (sizes past L2, rotating buffers)\n")
    ceiling = [r for r in tput if r.get("section") == "ceiling"]
    tceil = [r for r in ttput if r.get("section") == "ceiling" or r.get("kernel") == "d2d_copy"]
    if ceiling:
        c = max(r.get("tbps", 0) for r in ceiling)
        out.append(f"Device-to-device copy ceiling (cudaMemcpyAsync, bytes read + written): **{fmt(c)} TB/s**.\n")
    out.append("| kernel | dtype | shape | kpack best spec | kpack TB/s | of ceiling | Triton TB/s | kpack / Triton | torch TB/s |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    best = {}
    for r in tput:
        if r.get("section") != "throughput":
            continue
        dtype = r.get("dtype") or (re.search(r"_(f32|f16|bf16)_", r.get("spec", "") + "_") or [None, "?"])[1]
        key = (r.get("kernel"), variant_of(r), dtype, shape_key(r.get("shape")))
        if key not in best or r.get("tbps", 0) > best[key].get("tbps", 0):
            best[key] = dict(r, dtype=dtype)
    triton = {}
    torch = {}
    for r in ttput:
        if r.get("section") != "triton_throughput":
            continue
        key = (r.get("kernel"), variant_of(r), r.get("dtype"), shape_key(r.get("shape")))
        (triton if r.get("impl") == "triton" else torch)[key] = r
    for key in sorted(best, key=str):
        r = best[key]
        # kpack's AOT build of a Triton twin ("softmax_triton") is compared
        # with Triton's JIT of the same kernel ("softmax").
        jit_key = (key[0][:-len("_triton")],) + key[1:] if key[0].endswith("_triton") else key
        t = triton.get(jit_key)
        th = torch.get(key)
        vs = (r["tbps"] / t["tbps"]) if (t and t.get("tbps")) else None
        kernel = key[0] + (f" ({key[1]})" if key[1] else "")
        out.append(f"| {kernel} | {key[2]} | {r.get('shape')} | {r.get('spec')} | {fmt(r.get('tbps'))} | "
                   f"{fmt(r.get('ratio'))} | {fmt(t and t.get('tbps'))} | {fmt(vs)} | {fmt(th and th.get('tbps'))} |")
    paired = {((k[0][:-len("_triton")],) + k[1:]) if k[0].endswith("_triton") else k for k in best}
    unmatched = sorted(set(triton) - paired, key=str)
    if unmatched:
        out.append("\nTriton shapes kpack's bench did not run: " +
                   ", ".join(f"{k[0]} {k[2]} {'x'.join(map(str, k[3]))}" for k in unmatched))
    out.append("")


SPEC_CONFIG = re.compile(r"_([bt])(\d+)_w(\d+)$")
SWEEP_CONFIG = re.compile(r"^(BLOCK|TILE)=(\d+),w(\d+)")


def same_config_section(tput, ttput, out):
    """Issue 4's measure: each Triton specialization launched through kpack
    against Triton's JIT launching the same configuration (same BLOCK or
    TILE, same num_warps) on the same shape, in the same run."""
    jit = {}
    for r in ttput:
        m = SWEEP_CONFIG.match(r.get("config") or "") if r.get("section") == "triton_throughput_sweep" else None
        if m and r.get("valid") is not False:
            jit[(r.get("kernel"), variant_of(r), r.get("dtype"), shape_key(r.get("shape")),
                 int(m.group(2)), int(m.group(3)))] = r
    rows = []
    for r in tput:
        kernel = r.get("kernel", "")
        m = SPEC_CONFIG.search(r.get("spec", ""))
        if r.get("section") != "throughput" or not kernel.endswith("_triton") or not m:
            continue
        key = (kernel[:-len("_triton")], variant_of(r), r.get("dtype"), shape_key(r.get("shape")),
               int(m.group(2)), int(m.group(3)))
        t = jit.get(key)
        if t and t.get("tbps") and r.get("tbps"):
            rows.append((r, t, r["tbps"] / t["tbps"]))
    out.append("### Triton through kpack against Triton's JIT, same configuration\n")
    if not rows:
        out.append("No pairs: run `bench/run.sh` with both throughput steps (triton_throughput "
                   "reads throughput.jsonl to time kpack's configurations).\n")
        return
    ratios = sorted(x for _, _, x in rows)
    out.append(f"{len(rows)} pairs (spec x shape); kpack / JIT: median **{fmt(statistics.median(ratios), 3)}**, "
               f"min {fmt(ratios[0], 3)}, max {fmt(ratios[-1], 3)}.\n")
    out.append("| spec | shape | kpack TB/s | JIT TB/s | kpack / JIT |")
    out.append("| --- | --- | --- | --- | --- |")
    for r, t, x in sorted(rows, key=lambda row: (row[0].get("spec"), str(row[0].get("shape")))):
        out.append(f"| {r.get('spec')} | {r.get('shape')} | {fmt(r['tbps'])} | {fmt(t['tbps'])} | {fmt(x, 3)} |")
    out.append("")


def lazy_section(launch, out):
    out.append("## 5. Lazy loading: device memory used after launching N specializations\n")
    out.append("| launched | device memory used | libraries loaded |")
    out.append("| --- | --- | --- |")
    for name in ["after_1", "after_10", "after_all"]:
        r = find(launch, "lazy", name)
        if r:
            out.append(f"| {r.get('specializations', name)} | {fmt(r.get('mib'), 1)} MiB | {r.get('libraries_loaded')} |")
    r = find(launch, "lazy", "per_specialization_after_first")
    if r:
        out.append(f"\nPer further specialization: {fmt(r.get('mib'), 2)} MiB.")
    out.append("")


def zero_jit_section(folder, out):
    out.append("## 6. Zero JIT\n")
    for name, label in [("zero_jit_gpu_test", "every specialization with CUDA_DISABLE_PTX_JIT=1"),
                        ("zero_jit_no_sass", "a library built for sm_80 only, on this device")]:
        path = os.path.join(folder, name + ".jsonl")
        text = open(path).read() if os.path.exists(path) else ""
        summary = re.findall(r"^\d+ passed, \d+ failed", text, re.M)
        detail = re.findall(r"^device sm_.*$", text, re.M)
        out.append(f"- {label}: {summary[-1] if summary else 'n/a'}" + (f"; {detail[-1]}" if detail else ""))
    out.append("")


def main(folder):
    out = ["# kpack benchmarks\n"]
    dev = os.path.join(folder, "device.txt")
    if os.path.exists(dev):
        out.append("```\n" + open(dev).read().strip() + "\n```\n")
    launch = load(folder, "launch")
    jit = load(folder, "triton_jit")
    launch_section(launch, jit, out)
    cold_section(launch, jit, out)
    throughput_section(load(folder, "throughput"), load(folder, "triton_throughput"), out)
    same_config_section(load(folder, "throughput"), load(folder, "triton_throughput"), out)
    lazy_section(launch, out)
    zero_jit_section(folder, out)
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench-out")
