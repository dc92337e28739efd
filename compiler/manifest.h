// manifest.h - the load pass: YAML package file and kernel manifests in,
// a validated Package out.
//
// Every rejection names the offending node's position.  Unknown keys,
// duplicate keys, wrong types, empty value lists, duplicate kernels, unknown
// archs, missing sources and names that are not C identifiers are all
// errors: a manifest either means exactly one thing or is refused.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "diagnostics.h"
#include "model.h"
#include "triton_source.h"

namespace kpack {

struct LoadOptions {
  // Overrides every kernel's archs (the build's -Darchs); empty: manifests'.
  std::vector<Arch> archs_override;
  // Overrides every CUDA kernel's `batch:` (kpack build --batch); 0: manifests'.
  uint32_t batch_override = 0;

  // The project: every kernel manifest and source must lie inside this
  // directory (symlinks resolved), so a manifest cannot make kpack read, hash
  // and compile arbitrary files.  Empty: the package file's directory.
  std::string project_root;
  // Lifts that restriction (`kpack build --allow-outside-root`).
  bool allow_outside_root = false;

  // When set, these files (path -> contents, paths as the loader resolves
  // them) are the only ones that exist and the disk is never touched: the
  // fuzzer and tests run the pipeline on text held in memory.
  const std::map<std::string, std::string>* files = nullptr;

  // Directories of Triton kernels' Python packages (`kpack build
  // --python-path`), searched before the package file's python_path.
  std::vector<std::string> python_path;

  // Include roots of header-only libraries (`kpack build -I`), searched
  // before the package file's include_dirs; anywhere: the build owner
  // chose them.
  std::vector<std::string> include_dirs;

  // Reads Triton kernels' sources (triton_source.h).  nullptr: Triton
  // kernels are taken as their manifests say, with no source facts (tests
  // of the manifest format, the fuzzer).
  TritonDescriber* describer = nullptr;
};

// The load options a command line gives (kpack build, kpack tune): the
// project root, --allow-outside-root, --python-path, and -I made absolute
// (nvcc runs elsewhere, and the unit cache keys on them).
LoadOptions CommandLineLoadOptions(const std::string& root, bool allow_outside_root,
                                   const std::vector<std::string>& python_path,
                                   const std::vector<std::string>& include_dirs);

// Loads the package file at `path` and every kernel manifest it lists.
// Returns nullopt when `diag` has errors.
std::optional<Package> LoadPackage(const std::string& path, const LoadOptions& options,
                                   Diagnostics& diag);

// True for [A-Za-z_][A-Za-z0-9_]* that is not a C or C++ keyword and not a
// reserved name (leading "__" or "_" + uppercase).
bool IsCIdentifier(const std::string& s);

// True for a C++ name a template argument or an entry may be: identifiers
// joined by "::", optionally with a leading "::" ("flashinfer::norm::k",
// "::silu"); no component a keyword.  Reserved spellings are allowed
// (libraries use them: __nv_bfloat16).
bool IsQualifiedCppName(const std::string& s);

// "k" of "ns::detail::k".
std::string LastNameComponent(const std::string& s);

}  // namespace kpack
