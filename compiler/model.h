// model.h - what the manifests say, after the load pass validated them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics.h"
#include "expr.h"
#include "types.h"

namespace kpack {

// A target architecture: sm_90 is {90, kPlain}, sm_90a {90, kSpecific}.
struct Arch {
  enum class Variant { kPlain, kSpecific, kFamily };
  int number = 0;
  Variant variant = Variant::kPlain;

  std::string Name() const;       // "sm_90a"
  std::string SmValue() const;    // "90a", as fatbinary's sm= wants it
  uint32_t RuntimeCode() const;   // kpack_internal.h arch code
  auto operator<=>(const Arch&) const = default;
};

// Parses "sm_90a"; nullopt for archs CUDA 13 does not support.
std::optional<Arch> ParseArch(const std::string& name);
// The accepted arch names, comma-separated, for messages.
std::string SupportedArchList();

// float and str are Triton's: a tl.constexpr may be any Python literal.
enum class ConstexprKind { kInt, kBool, kDtype, kFloat, kStr };

// One value of a constexpr: an integer (int, and bool as 0/1), a dtype, a
// float or a string.
struct ConstexprValue {
  int64_t integer = 0;
  Scalar dtype = Scalar::kF32;
  double real = 0;   // kFloat
  std::string text;  // kStr; kFloat: its shortest spelling ("1e-06")
  SourceLoc loc;
};

// Whether two values of one constexpr are the same value.
bool SameValue(const ConstexprValue& a, const ConstexprValue& b);

// Where a constexpr comes from (docs/manifest.md, "Triton sources").
enum class ConstexprOrigin {
  kManifest,   // the manifest's constexprs or options
  kAutotune,   // a field of the kernel's autotune configs
  kHeuristic,  // a triton.heuristics value, computed by the launcher
};

struct Constexpr {
  std::string name;
  ConstexprKind kind = ConstexprKind::kInt;
  std::vector<ConstexprValue> values;
  std::string tag;  // name part prefix: "b" in "b256"
  SourceLoc loc;
  // A Triton compile option (num_warps, num_stages, maxnreg,
  // enable_fp_fusion, num_ctas), not a tl.constexpr parameter of the kernel.
  bool option = false;
  ConstexprOrigin origin = ConstexprOrigin::kManifest;
  // A computed constexpr: the launcher evaluates `rule` over the call's
  // values and runs the build for the result; callers never pass it, and
  // it is not part of the API's names.  `rule_source` says where the rule
  // came from, for messages ("heuristic at fla/ops/x.py:12:18").
  std::optional<Expr> rule;
  std::string rule_source;
  bool rule_none = false;  // `rule: none`: the caller chooses, whatever the source computes
  // Whether callers see it (specialization names, dispatcher arguments,
  // config structs): false for what every build shares (a field all
  // autotune configs set alike).
  bool in_api = true;

  // CUDA `type: cpp`: the values are C++ names (a type, a function, an
  // enumerator), held as kStr text and pasted into the template argument
  // list; the name part is the name's last component.
  bool cpp_name = false;

  // `auto: EXPR` (int and bool constexprs): the rule an engine would
  // otherwise write to choose the value.  The auto dispatcher
  // <prefix>_<kernel>_auto evaluates it from the call's params, the other
  // constexprs and the device, and calls the dispatcher with the result;
  // everywhere else the constexpr is an ordinary axis the caller chooses.
  std::optional<Expr> auto_rule;
  SourceLoc auto_loc;  // the `auto:` value

  bool Computed() const { return rule.has_value(); }
  bool Auto() const { return auto_rule.has_value(); }
  // A constexpr the caller chooses: in the API, not computed.
  bool InApi() const { return in_api && !Computed(); }
};

// The type of a runtime parameter: a scalar, or a pointer to a scalar or
// to the dtype named by a constexpr.
struct ParamType {
  bool is_pointer = false;
  bool is_const = false;
  std::string dtype_constexpr;  // non-empty: T* where T is a dtype constexpr
  Scalar scalar = Scalar::kI64; // otherwise the element or value type
};

// A `type: tensordesc` param (docs/manifest.md, "Tensor descriptors"): a
// TMA descriptor of a tensor the launcher is given as base, shape and
// strides.  Its ParamType is the base pointer's.
struct TensorDesc {
  std::vector<Expr> block;  // 1..5 dims over the constexprs, outermost first
  bool padding_nan = false; // out-of-bounds loads read NaN instead of zero
  // CUDA: CUtensorMapSwizzle (0 none .. 3 128B), from the manifest; Triton
  // chooses its own at compile time (-1 here).
  int swizzle = -1;
  SourceLoc loc, block_loc, padding_loc, swizzle_loc;

  size_t Rank() const { return block.size(); }
};

struct Param {
  std::string name;
  ParamType type;
  std::optional<TensorDesc> tensordesc;  // `type: [const] tensordesc`
  int divisibility = 0;   // Triton: 16 promises the value (or address) is a multiple of 16
  // `divisibility: auto` (divisibility is then 16): the hint holds only in
  // the aligned variant, which the launcher picks when the value allows it.
  bool divisibility_auto = false;
  SourceLoc divisibility_loc;  // line 0: the manifest does not say
  // `width: auto` on an i64 param (Triton): the i32 variant passes it as
  // int32, as Triton's JIT does for values that fit; the launcher picks.
  bool width_auto = false;
  SourceLoc width_loc;         // line 0: the manifest does not say
  // `equal_to_1: auto` (Triton): the aligned builds take the param as the
  // constant 1, as Triton's JIT does with an integer argument equal to 1,
  // and the launcher runs them only when the value is 1.
  bool equal_to_1 = false;
  SourceLoc equal_to_1_loc;
  // A launch-only param sizes the launch (grid, block, shared memory,
  // rules) and is not passed to the kernel.
  bool launch_only = false;
  std::string type_text;  // as written, for messages
  SourceLoc loc;
};

// A partial assignment of constexpr values; a combination matching every
// entry is excluded.
struct Exclusion {
  std::vector<std::pair<size_t, ConstexprValue>> matches;  // constexpr index
  SourceLoc loc;
};

// A Triton kernel's autotune configs: the combinations of some constexprs
// and options (`axes`, constexpr indices) that are built.  Every other
// combination of those axes is left out of the product.
struct ConfigSet {
  std::vector<size_t> axes;
  std::vector<std::vector<ConstexprValue>> tuples;  // one value per axis
  std::vector<std::string> key;  // autotune's key: the params a choice depends on
  SourceLoc loc;                 // the decorator, or the manifest's autotune:
};

// How a Triton kernel's parameters are specialized, as Triton's JIT
// specializes a call (docs/manifest.md, "Specialization").
enum class Variants {
  kJit,   // two builds: the JIT's usual one (auto params hinted, i32) and the general one
  kEach,  // the aligned and the i32 variant separately: up to four builds
  kNone,  // one build, the params as the manifest types them
};

// Programmatic dependent launch (`launch.pdl`): never, on every launch,
// or as each call says (the launcher takes a `bool pdl`).
enum class Pdl { kOff, kOn, kPerCall };

struct Launch {
  std::vector<Expr> grid;   // 1..3
  std::vector<Expr> block;  // 1..3
  Expr shared_mem;
  std::optional<Expr> launch_bounds;
  // Launch attributes, passed through cuLaunchKernelEx (kpack_launch_ex).
  Pdl pdl = Pdl::kOff;
  std::vector<Expr> cluster;  // empty, or 1..3 constexpr expressions
  bool cooperative = false;
  SourceLoc loc;
  // Where each optional key was given (line 0: absent), for language checks.
  SourceLoc block_loc, shared_mem_loc, launch_bounds_loc, pdl_loc, cluster_loc, cooperative_loc;

  bool HasAttributes() const { return pdl != Pdl::kOff || !cluster.empty() || cooperative; }
};

enum class Language { kCuda, kTriton };

// Triton's compile options that kpack builds as axes: what triton.Config
// and the JIT's launch keywords set.
inline bool IsTritonOption(const std::string& name) {
  return name == "num_warps" || name == "num_stages" || name == "maxnreg" || name == "enable_fp_fusion" ||
         name == "num_ctas";
}

// What the load pass learned of a Triton kernel from its source, without
// running it (triton_source.h): kept for the inventory and the build.
struct TritonFacts {
  std::vector<std::string> inputs;  // every file the kernel is made from
  std::vector<std::string> autotune_key;
  int line = 0;                     // of the entry's def
};

// How `kpack tune` fills a tuning buffer before it times the kernel
// (docs/manifest.md, "Offline tuning").
struct TuneFill {
  enum class Kind {
    kDefault,  // random in [-1, 1) for float elements, zero for integers
    kRandom,   // random in [-1, 1) (floats) or random bits (integers)
    kZero,
    kRange,    // integers uniform in [lo, hi)
    kValue,    // every element `value`
    kStep,     // element i is i * value (offsets of equal-sized rows)
  };
  Kind kind = Kind::kDefault;
  std::optional<Expr> lo, hi;  // kRange
  std::optional<Expr> value;   // kValue, kStep
  SourceLoc loc;
};

// A pointer param's tuning buffer: `count` elements of its pointee type.
struct TuneBuffer {
  std::string param;
  Expr count;
  TuneFill fill;
  SourceLoc loc;
};

// A param that is not a key: its value at a tuning shape.
struct TuneParam {
  std::string param;
  Expr value;
  SourceLoc loc;
};

// One key param's tuned values: ascending, distinct, positive.
struct TuneAxis {
  std::string param;
  std::vector<int64_t> values;
  SourceLoc loc;
};

// A kernel's `tune:` section: the key params (autotune's `key`), the grid
// of shapes `kpack tune` times every built specialization at (every
// combination of the axes' values), the other params' values there, each
// pointer param's buffer, and which specializations may run at a shape.
// What it chooses are the kernel's auto constexprs; the others (dtypes)
// get a table per built combination.
struct Tune {
  std::vector<TuneAxis> key;        // in `key:` order; the grid's last axis varies fastest
  std::vector<TuneParam> params;    // every scalar param that is not a key, in `params:` order (each reads those before it)
  std::vector<TuneBuffer> buffers;  // every pointer param, in param order
  std::optional<Expr> valid;        // over params and constexprs; absent: every spec
  SourceLoc loc;                    // the `tune:` key
};

struct Kernel {
  std::string name;
  Language language = Language::kCuda;
  std::string manifest_path;  // as given (relative), for messages
  std::string source_path;    // resolved, relative to the working directory
  std::string source_name;    // relative to the project root (RootRelative)
  std::string source_text;    // as written in the manifest, for messages
  std::string module;         // Triton `module:` (dotted), found on the python path
  std::string entry;
  // CUDA: the entry is a __global__ function template (a kernel as its
  // authors wrote it) rather than a __device__ function kpack wraps; found
  // by scanning the source and its includes (cuda_entry.h) at
  // global_entry_at ("flashinfer/norm.cuh:63:17").
  bool global_entry = false;
  std::string global_entry_at;
  bool source_on_include_path = false;  // `source: <dir/file.cuh>`
  std::vector<std::string> include_dirs;  // the build owner's (-I, include_dirs:)
  std::string doc;
  std::vector<Constexpr> constexprs;
  std::vector<Param> params;
  std::vector<Exclusion> exclusions;
  std::optional<ConfigSet> configs;  // Triton autotune configs
  Launch launch;
  std::vector<Arch> archs;
  bool ptx = false;
  // CUDA: how many specializations one nvcc run compiles together (plan.h
  // "Batches"); 1 compiles each alone.
  uint32_t batch = 8;
  std::vector<std::string> nvcc_flags;  // package flags, then kernel flags
  std::vector<SourceLoc> nvcc_flag_locs;  // where each was written
  // A debug kernel (debug_guard.h): `debug: true`, or a debug nvcc flag
  // (-G, -O0, ...).  debug_reason says which, at debug_loc.
  bool debug = false;
  std::string debug_reason;  // "nvcc flag -G", "debug: true"
  SourceLoc debug_loc;
  bool allow_debug = false;  // `allow_debug: true` here or in the package
  SourceLoc loc;           // the `kernel:` value
  SourceLoc source_loc;    // the `source:` value
  SourceLoc params_loc;    // the `params:` key, for layout mismatches

  // Triton: how the source is read (`load:` slice, the default, or
  // execute), where its package's modules are found, the values `assume:`
  // gives module-level names (JSON literals), and how params specialize.
  bool execute_module = false;
  std::vector<std::string> python_path;
  std::vector<std::pair<std::string, std::string>> assume;
  Variants variants = Variants::kJit;
  SourceLoc variants_loc;
  TritonFacts triton;

  // `tune:` (offline tuning); absent: the auto dispatcher runs the rules.
  std::optional<Tune> tune;

  // The archs the cubins are built for: `archs`, except that Triton builds
  // Hopper and newer for the arch-specific variant (sm_90 as sm_90a), as its
  // own JIT does.
  std::vector<Arch> BuildArchs() const;
  // "debug" or "release": what every specialization records.
  const char* BuildMode() const { return debug ? "debug" : "release"; }
  // Triton's num_warps: the option of that name in `values`, else the
  // kernel's own tl.constexpr of that name (as the JIT, given it as a
  // keyword, sets both), else 4.
  int64_t NumWarps(const std::vector<ConstexprValue>& values) const;
  // Triton's num_stages, likewise; else 3.
  int64_t NumStages(const std::vector<ConstexprValue>& values) const;
  // Triton's num_ctas option (the CTAs of a cluster), else 1.
  int64_t NumCtas(const std::vector<ConstexprValue>& values) const;
  // The option `name` in `values`, if the kernel has it as an axis.
  const ConstexprValue* Option(const std::vector<ConstexprValue>& values, const std::string& name) const;

  // Whether a computed constexpr (a rule) selects among builds.
  bool HasComputed() const;
  // The computed constexprs' indices in an order that computes each after
  // those its rule reads (declaration order otherwise); nullopt, with the
  // name of one of them in *cycle, when rules read each other in a cycle.
  std::optional<std::vector<size_t>> ComputedOrder(std::string* cycle = nullptr) const;

  // Whether some constexpr has an `auto:` rule (the kernel then has an auto
  // dispatcher).
  bool HasAuto() const;
  // The auto constexprs' indices in an order that evaluates each after the
  // auto constexprs its rule reads (declaration order otherwise); nullopt,
  // with the name of one of them in *cycle, when rules read each other (or
  // one itself) in a cycle.
  std::optional<std::vector<size_t>> AutoOrder(std::string* cycle = nullptr) const;

  // Whether each specialization also gets an aligned variant: some param
  // says `divisibility: auto` or `equal_to_1: auto`.
  bool HasAlignedVariant() const;
  // Whether each specialization also gets an i32 variant: some param says
  // `width: auto`.
  bool HasNarrowVariant() const;

  const Constexpr* FindConstexpr(const std::string& name) const;
  const Param* FindParam(const std::string& name) const;
};

// One GPU model's tuning of a package (a tuning file, written by `kpack
// tune`, read by the build): per tuned kernel and per built combination of
// its non-auto constexprs, the time of every candidate at every shape.
// A shape tuned between the grid's values (tune_probe.h): on every key
// with more than one grid value strictly between two neighbouring ones.
struct TunedProbe {
  std::vector<int64_t> at;  // one value per key, in `key:` order
  std::vector<std::pair<size_t, double>> ranking;  // as TunedTable::ranking's
  SourceLoc loc;
};

struct TunedTable {
  std::vector<ConstexprValue> combo;  // one per API constexpr that is not auto, in constexpr order
  // `variant: unaligned`: the times of the launcher's unaligned variant
  // (Triton kernels with `divisibility: auto` params), which the auto
  // dispatcher uses where the call is not aligned; else the aligned one's
  // (or the only one's).
  bool unaligned = false;
  SourceLoc loc, variant_loc;
  // Per shape of the kernel's grid (row-major, last key fastest): the
  // candidates (indices into TunedKernel::candidates) that may run there,
  // fastest first, and their median times in microseconds.
  std::vector<std::vector<std::pair<size_t, double>>> ranking;
  // Shapes between the grid's values (`probes:`), in the file's order.
  std::vector<TunedProbe> probes;
  // As the file wrote `for` (constexpr name, value text, position), read
  // against the manifest once the build knows it is not stale; and the first
  // use of each candidate in this table, for "not built" messages.
  std::vector<std::pair<std::string, std::string>> for_text;
  std::vector<SourceLoc> for_locs;
  std::vector<std::pair<size_t, SourceLoc>> uses;
};

struct TunedKernel {
  std::string kernel;
  std::string manifest_hash;   // TuneManifestHash when tuned
  SourceLoc loc, hash_loc;
  std::vector<TuneAxis> key;   // the grid it was tuned on
  std::vector<std::string> tuned;  // the auto constexprs, in constexpr order
  // Each candidate's values of `tuned`.
  std::vector<std::vector<int64_t>> candidates;
  std::vector<TunedTable> tables;
  bool stale = false;  // the manifest changed since (--allow-stale-tuning)
  // Each candidate's label as written ("BLOCK=256 num_warps=4") and its
  // first use; where `key:`, `shapes:` and `tuned:` were written.
  std::vector<std::string> labels;
  std::vector<SourceLoc> label_locs;
  SourceLoc key_loc, shapes_loc, tuned_loc;
};

struct TuningFile {
  std::string path;   // as listed in the package file, resolved
  std::string listed; // as listed, relative to the package file (for the inventory)
  std::string gpu;    // cuDeviceGetName, e.g. "NVIDIA H100 80GB HBM3"
  int sm = 0;         // 90
  std::string driver;         // "580.159.04 (CUDA 13.0)"
  std::string kpack_version;  // of the kpack that tuned
  std::vector<TunedKernel> kernels;
  SourceLoc loc;
};

// The largest `batch:` a manifest may ask for: nvcc's memory grows with
// every instantiation of a run, and one failed run is compiled again one
// specialization at a time.
inline constexpr int64_t kMaxBatch = 64;

struct Package {
  std::string name;
  std::string prefix;
  std::string manifest_path;
  std::vector<Arch> archs;
  bool ptx = false;
  std::vector<std::string> nvcc_flags;
  std::vector<SourceLoc> nvcc_flag_locs;  // one per nvcc_flags entry
  bool allow_debug = false;               // every kernel may be a debug build
  uint64_t max_specializations = 4096;
  uint32_t batch = 8;         // specializations per nvcc run; kernels inherit it
  std::string compress_mode;  // fatbinary --compress-mode; "" for its default
  // Triton: directories of the kernels' Python packages, and `assume:`
  // values every kernel inherits (a kernel's own win).
  std::vector<std::string> python_path;
  std::vector<std::pair<std::string, std::string>> assume;
  // CUDA: header-only libraries' include roots (`kpack build -I`, then the
  // package file's include_dirs), searched for `source: <...>` and passed
  // to nvcc as -I.
  std::vector<std::string> include_dirs;
  std::vector<Kernel> kernels;
  // `tuning:` files, in the package file's order: the first that matches a
  // device's model wins, then the first with its sm.
  std::vector<TuningFile> tunings;
  SourceLoc loc;
};

}  // namespace kpack
