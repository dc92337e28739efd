// tune_hash.h - what a tuning file was measured against: a hash of the parts
// of a kernel's manifest that the timings depend on, so that a tuning file
// goes stale exactly when they change (docs/manifest.md, "Offline tuning").
#pragma once

#include <string>
#include <vector>

#include "expand.h"
#include "model.h"

namespace kpack {

// 16 hex digits (of BLAKE3) over: the kernel's name and language; its
// constexprs (names, kinds, values, auto rules); its params (names, types,
// hints); its launch expressions; the `tune:` section (key and shapes,
// params, buffers and fills, valid); and the names of `specs`, the kernel's
// API specializations (so an exclusion that removes a build changes it).
// Comments, docs, layout and the source file do not: a tuning file stays
// good across them (a changed source is re-tuned by choice, not forced).
std::string TuneManifestHash(const Kernel& k, const std::vector<const Specialization*>& specs);

}  // namespace kpack
