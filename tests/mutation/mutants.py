#!/usr/bin/env python3
"""mutants.py BUILD_DIR [NAME...] - a small, hand-picked mutation test.

Each mutant breaks one safety check of the hostile-input, fault and crash
work (issue 7) with a one-line source edit; the tests that guard that check
must then fail.  For each mutant: apply the edit, rebuild the test's
targets, run the tests, restore the file.  A mutant the tests do not catch
is printed as SURVIVED and makes the exit status 1.  Not run by CI (each
mutant rebuilds and reruns tests: about 1 to 2 minutes); the last results
are in docs/hardening.md.
"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

# (name, file, original text, mutated text, (targets to rebuild, tests to run))
COMPILER = (["compiler_tests"], ["compiler"])
RUNTIME = (["kpack_runtime_test"], ["runtime", "runtime races"])
CRASH = (["kpack", "crash_shim"], ["e2e-crash-safe"])
MUTANTS = [
    ("duplicate keys accepted", "compiler/manifest.cc",
     "Error(key, \"duplicate key '\" + name + \"' in \" + what);", ";", COMPILER),
    ("';' allowed in C identifiers", "compiler/manifest.cc",
     "if (!alpha(c) && !digit(c)) return false;", "if (!alpha(c) && !digit(c) && c != ';') return false;",
     COMPILER),
    ("'..' may leave the project", "compiler/manifest.cc",
     "return !rel.empty() && *rel.begin() != \"..\" && rel != \".\";", "return !rel.empty();", COMPILER),
    ("symlinks not resolved", "compiler/manifest.cc",
     "return options.files || ec ? absolute : fs::weakly_canonical(absolute, ec);", "return absolute;",
     COMPILER),
    ("'$' not a shell metacharacter", "compiler/manifest.cc",
     "kShellMetacharacters = \"$`;", "kShellMetacharacters = \"`;", COMPILER),
    ("tag may hold '*' and '/'", "compiler/manifest.cc",
     "(ch >= '0' && ch <= '9') || ch == '_';", "(ch >= '0' && ch <= '9') || ch == '_' || ch == '*' || ch == '/';",
     COMPILER),
    ("duplicate exclude keys accepted", "compiler/manifest.cc",
     "r_.Error(entry.first, \"duplicate key '\" + name + \"' in exclude entry\");", ";", COMPILER),
    ("NUL bytes accepted", "compiler/yaml_input.cc", "if (text[i] == '\\0') {", "if (false) {", COMPILER),
    ("UTF-16 surrogates accepted", "compiler/yaml_input.cc",
     "if (c == 0xED && c1 >= 0xA0) return 0;", "", COMPILER),
    ("depth limit one level late", "compiler/yaml_input.cc",
     "if (static_cast<int>(frames_.size()) > limits_.max_depth)",
     "if (static_cast<int>(frames_.size()) > limits_.max_depth + 1)", COMPILER),
    ("aliases counted as one node", "compiler/yaml_input.cc",
     "Add(mark, it == anchored_.end() ? 1 : it->second);", "Add(mark, 1);", COMPILER),
    ("second document ignored", "compiler/yaml_input.cc", "parser.HandleNextDocument(second);", ";", COMPILER),
    ("every cuCtxGetDevice error is 'no context'", "runtime/kpack_runtime.c",
     "if (r == CUDA_ERROR_INVALID_CONTEXT) {", "if (r != CUDA_SUCCESS) {", RUNTIME),
    ("first load without the lock", "runtime/kpack_runtime.c",
     "  pthread_mutex_lock(&g_load_lock);\n  /* Relaxed under the lock", "  /* Relaxed under the lock", RUNTIME),
    ("every launch takes the first-launch path", "runtime/kpack_runtime.c",
     "  const uint32_t ready = atomic_load_explicit(&st->device_ready[dev], memory_order_acquire);",
     "  const uint32_t ready = 0;", RUNTIME),
    ("a failed first launch marks the device ready", "runtime/kpack_runtime.c",
     "  if (s == KPACK_SUCCESS && r == CUDA_SUCCESS && (ready & needed) != needed) {",
     "  if ((ready & needed) != needed) {", RUNTIME),
    # The arch check runs only after a first use failed (kpack_runtime.c).
    ("no arch check after a failed first use", "runtime/kpack_runtime.c",
     "  return check_archs(k, dev, *cc, r);", "  return KPACK_SUCCESS;", RUNTIME),
    ("the compute capability read again each time", "runtime/kpack_runtime.c",
     "  if (known != 0) {", "  if (0) {", RUNTIME),
    # The fatbin is loaded in place, with a plain retry for a driver that
    # predates the option (kpack_runtime.c, load_library).
    ("the fatbin loaded without CU_LIBRARY_BINARY_IS_PRESERVED", "runtime/kpack_runtime.c",
     "k->fatbin->data, NULL, NULL, 0, options, values, 1);", "k->fatbin->data, NULL, NULL, 0, NULL, NULL, 0);",
     RUNTIME),
    ("no plain load when the option is refused", "runtime/kpack_runtime.c",
     "  if (r == CUDA_ERROR_INVALID_VALUE) {", "  if (0) {", RUNTIME),
    # The first launch skips cuInit only when a context is current.
    ("cuInit skipped without a current context", "runtime/driver.c",
     "if (t->ctx_get_device(device) == CUDA_SUCCESS) {", "if (1) {", RUNTIME),
    ("a driver not loaded yet is not loaded", "runtime/driver.c",
     "    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);", "    ;", RUNTIME),
    ("lazy entry points kept after the driver is closed", "runtime/driver.c",
     "    clear_lazy();\n    dlclose(g_table.handle);", "    dlclose(g_table.handle);", RUNTIME),
    ("outputs written in place", "compiler/fs_util.cc",
     "std::string tmp = path + \".tmp.\" + std::to_string(getpid()) + \".\" + std::to_string(counter++);",
     "std::string tmp = path;", CRASH),
    ("cache entries trusted without their hash", "compiler/unit_cache.cc",
     "if (!binary || HashHex(*binary) != binary_hash) return false;", "if (!binary) return false;", CRASH),
]


def run(cmd, **kw):
    return subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def main():
    build = sys.argv[1]
    only = set(sys.argv[2:])
    survived = caught = 0
    for name, file, old, new, (targets, tests) in MUTANTS:
        if only and name not in only:
            continue
        path = ROOT / file
        original = path.read_text()
        if original.count(old) != 1:
            print(f"STALE: {name}: the text to mutate is not in {file} exactly once")
            survived += 1
            continue
        try:
            path.write_text(original.replace(old, new))
            built = run(["meson", "compile", "-C", build] + targets)
            if built.returncode != 0:
                print(f"caught: {name} (does not build)")
                caught += 1
                continue
            result = run(["meson", "test", "-C", build, "--no-rebuild"] + tests)
            if result.returncode != 0:
                print(f"caught: {name}")
                caught += 1
            else:
                print(f"SURVIVED: {name}")
                survived += 1
        finally:
            path.write_text(original)
    run(["meson", "compile", "-C", build, "compiler_tests", "kpack_runtime_test", "kpack"])
    print(f"{caught + survived} mutants: {caught} caught, {survived} survived")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
