// codegen.h - the generate pass: the C header that engines include, the
// launcher source compiled into the library, and the assembler file that
// embeds the fatbins.
//
// Output is a pure function of the manifests (plus fatbin hashes for the
// assembler file): no timestamps, no absolute paths, no dependence on the
// build directory, so the committed generated/ headers can be checked for
// staleness byte for byte.
#pragma once

#include <string>
#include <vector>

#include "expand.h"
#include "model.h"

namespace kpack {

struct CodegenOptions {
  std::string manifest_label;  // package file path relative to the project root
  std::string header_name;     // "kernels.h", as the launcher source includes it
};

std::string GenerateHeader(const Package& pkg, const std::vector<Specialization>& specs,
                           const CodegenOptions& options);

std::string GenerateLauncherSource(const Package& pkg, const std::vector<Specialization>& specs,
                                   const CodegenOptions& options);

// The assembler source embedding fatbin i of `fatbin_paths` (paths the
// assembler resolves from its working directory) as blob i; each blob's
// content hash is written beside it so the file changes with the content.
std::string GenerateEmbedAsm(const Package& pkg, const std::vector<std::string>& fatbin_paths,
                             const std::vector<std::string>& fatbin_hashes);

}  // namespace kpack
