#!/usr/bin/env python3
"""units.py - how many units (build x arch) the corpus packages cost, by
`variants:` mode, from kpack's inventories (issue 14 asks for the counts
before and after the JIT's specialization became the default).

    python3 bench/corpus/units.py build/corpus/liger.json build/corpus/fla.json

For each package: the API's specializations, and the units of
  none  one build per specialization (and computed value): the params as
        typed, what a manifest that lists params plainly built before;
  jit   the default, as built: the general build plus the JIT's;
  each  the aligned and i32 variants separately: up to 4 builds.
"""
import json
import sys


def count(inventory):
    api = none = jit = each = 0
    for k in inventory["kernels"]:
        kinds_aligned = any(p.get("divisibility") == "auto" or p.get("equal_to_1") for p in k["params"])
        kinds_narrow = any(p.get("width") == "auto" for p in k["params"])
        per_base = 1 + kinds_aligned + kinds_narrow + (kinds_aligned and kinds_narrow)
        for s in k["specializations"]:
            archs = len(s["units"])
            api += 0 if "build" in s else 1
            jit += archs
            if "variant" not in s.get("build", ""):
                none += archs
                each += archs * per_base
    return api, none, jit, each


def main(argv):
    print("| package | specializations | units, variants: none | units, jit (default) | units, each |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for path in argv[1:]:
        inventory = json.load(open(path))
        api, none, jit, each = count(inventory)
        print("| %s | %d | %d | %d | %d |" % (inventory["package"], api, none, jit, each))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
