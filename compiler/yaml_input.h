// yaml_input.h - turning manifest bytes, which may be hostile, into a YAML
// tree, or into one located error.
//
// yaml-cpp accepts things a manifest must not hold, or handles them in ways
// that would hurt the passes after it:
//   - NUL bytes and bytes that are not UTF-8 (names and doc strings end up in
//     the generated C header);
//   - alias bombs: `&a [*b, *b, ...]` nested ten deep is a few hundred bytes
//     that mean billions of nodes to anything walking the tree;
//   - deep nesting: yaml-cpp recurses once per level, up to 2000 levels;
//   - a second document after `---`, which YAML::Load silently drops.
// Each is refused with `file:line:col: error: ...` before the tree is built.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>

#include "diagnostics.h"

namespace kpack {

struct YamlLimits {
  int max_depth = 64;                  // nested sequences and mappings
  uint64_t max_nodes = 100000;         // nodes, with every alias expanded
};

// Parses `text` (the contents of `file`) into its single document.  Returns
// nullopt after reporting the first problem to `diag`.
std::optional<YAML::Node> ParseManifestText(const std::string& file, const std::string& text,
                                            Diagnostics& diag, const YamlLimits& limits = {});

}  // namespace kpack
