// tune_reader.h - a kernel manifest's `tune:` section (docs/manifest.md,
// "Offline tuning: tune:"): the grid of shapes `kpack tune` times every
// built specialization at, the values of the other params and the buffers
// there, and where a specialization may run.
//
// Read with the whole kernel at hand (KernelReader::Finish, after a Triton
// kernel's source merge), since every name it holds is checked against the
// kernel's params, constexprs and auto rules.
#pragma once

#include <yaml-cpp/yaml.h>

#include "model.h"
#include "yaml_reader.h"

namespace kpack {

// Reads `tune:` (`key` is its key node, `value` its value) into k.tune and
// reports each problem at its position: a kernel with no auto constexpr
// (tuning chooses those); key params that are not distinct integer params;
// shapes that are not exactly the key params' ascending, distinct, positive
// values of their C types, or more than kMaxTuneShapes of them; params and
// buffers that are not exactly the other scalar params and the pointer
// params, or whose expressions read what they may not (anything but the key
// params and the tune params listed before them); an integer fill (range,
// value, step) of a buffer that may hold floats; a `valid` that reads what
// the auto dispatcher cannot (device attributes, computed constexprs).
void ReadTune(FileReader& r, const YAML::Node& key, const YAML::Node& value, Kernel& k);

// The most shapes a grid may have: each is timed for every built
// specialization, so a larger grid is a tuning run of hours.
inline constexpr uint64_t kMaxTuneShapes = 4096;

}  // namespace kpack
