// tuning_merge.h - `kpack tune --kernel NAME`: the kernels a partial run
// tuned replace theirs in the tuning file already written for that GPU,
// and the file's other kernels stay as they were, byte for byte, so that
// re-tuning one kernel never loses the others' tables (docs/tuning.md,
// "Re-tuning some kernels").
#pragma once

#include <string>
#include <vector>

namespace kpack {

struct TuningMerge {
  std::string text;               // the merged file
  std::vector<std::string> kept;  // the existing file's kernels kept as they were, in its order
  std::string error;              // "PATH:LINE:COL: error: ..."; text is empty then
};

// Merges `fresh` (FormatTuningFile of the partial run) into `existing`,
// the text of the tuning file at `path`.  The header (package, GPU, sm,
// driver, kpack version, repeats) is the fresh run's; the existing file
// must be kpack tune's format (a `kernels:` line, then entries that each
// start "  - kernel: NAME") for the same package and GPU.  A re-tuned
// kernel takes its old entry's place; one the file did not have goes last.
TuningMerge MergeTuningText(const std::string& path, const std::string& existing, const std::string& fresh);

}  // namespace kpack
