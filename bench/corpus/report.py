#!/usr/bin/env python3
"""report.py - the table of a corpus_parity.py --time run (its --json).

    python3 bench/corpus/report.py bench/results/DIR/corpus.json
"""
import json
import math
import sys


def main(argv):
    run = json.load(open(argv[1]))
    results = run["results"]
    print("| package | launcher | shape | build | kpack us | JIT us | kpack / JIT |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: |")
    for r in results:
        print("| %s | `%s` | %s | %s | %.1f | %.1f | %.3f |" % (r["package"], r.get("launcher", r["kernel"]), r["shape"],
                                                           r.get("build", "?"), r.get("kpack_us", 0), r.get("jit_us", 0),
                                                           r.get("ratio", 0)))
    print()
    for package in sorted({r["package"] for r in results}):
        ratios = [r["ratio"] for r in results if r["package"] == package and "ratio" in r]
        equal = sum(1 for r in results if r["package"] == package and r["bit_equal"])
        total = sum(1 for r in results if r["package"] == package)
        print("%s: %d of %d cases bit-equal; kpack / JIT time geometric mean %.3f, min %.3f, max %.3f" % (
            package, equal, total, math.exp(sum(map(math.log, ratios)) / len(ratios)), min(ratios), max(ratios)))
    ratios = [r["ratio"] for r in results if "ratio" in r]
    print("all: geometric mean %.3f over %d cases (seed %d, %s)" % (
        math.exp(sum(map(math.log, ratios)) / len(ratios)), len(ratios), run["seed"], run["device"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
