// Writes the embedding .S that kpack generates, for blob files given on
// the command line: the >2 GiB test links it without building real fatbins.
//   large_embed_gen OUT.S PREFIX BLOB...
#include <iostream>
#include <vector>

#include "codegen.h"
#include "fs_util.h"
#include "model.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: large_embed_gen OUT.S PREFIX BLOB...\n";
    return 2;
  }
  kpack::Package pkg;
  pkg.name = pkg.prefix = argv[2];
  std::vector<std::string> paths(argv + 3, argv + argc), hashes(paths.size(), "synthetic");
  std::string err = kpack::WriteFileAtomic(argv[1], kpack::GenerateEmbedAsm(pkg, paths, hashes));
  if (!err.empty()) std::cerr << err << "\n";
  return err.empty() ? 0 : 1;
}
