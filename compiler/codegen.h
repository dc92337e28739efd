// codegen.h - the generate pass: the C header that engines include, the
// launcher source compiled into the library, and the assembler file that
// embeds the fatbins.
//
// Output is a pure function of the manifests (plus fatbin hashes for the
// assembler file): no timestamps, no absolute paths, no dependence on the
// build directory, so the committed generated/ headers can be checked for
// staleness byte for byte.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "expand.h"
#include "model.h"
#include "triton.h"

namespace kpack {

struct CodegenOptions {
  std::string manifest_label;  // package file path relative to the project root
  std::string header_name;     // "kernels.h", as the launcher source includes it
};

std::string GenerateHeader(const Package& pkg, const std::vector<Specialization>& specs,
                           const CodegenOptions& options);

// What Triton decided for one specialization, over all its archs: the
// launcher passes 32 x num_warps threads, `shared` bytes of dynamic shared
// memory, clusters of num_ctas, each descriptor's TMA layout, and the
// hidden scratch pointers (NULL where the scratch size is 0).
struct TritonLaunch {
  uint32_t shared = 0;
  uint32_t num_warps = 4;
  uint32_t hidden_pointer_params = 2;
  uint32_t num_ctas = 1;
  TritonScratch global_scratch, profile_scratch;  // over every build of its group
  std::vector<DescLayout> descs;
};

// `triton` maps Triton specializations to their launch; one missing gets
// TritonLaunch{} with the specialization's num_warps (for golden tests).
// `blob_of_spec[i]` is the embedded fatbin holding specs[i] (PackedSpec::blob:
// specializations compiled in one batch share one); empty: blob i.
std::string GenerateLauncherSource(const Package& pkg, const std::vector<Specialization>& specs,
                                   const CodegenOptions& options,
                                   const std::map<const Specialization*, TritonLaunch>& triton = {},
                                   const std::vector<size_t>& blob_of_spec = {});

// The assembler source embedding fatbin i of `fatbin_paths` (paths the
// assembler resolves from its working directory) as blob i; each blob's
// content hash is written beside it so the file changes with the content.
std::string GenerateEmbedAsm(const Package& pkg, const std::vector<std::string>& fatbin_paths,
                             const std::vector<std::string>& fatbin_hashes);

}  // namespace kpack
