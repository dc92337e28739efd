// cuda_reader.h - the keys and checks only CUDA kernels have: entries that
// are __global__ templates in header-only libraries, C++-name template
// arguments, and launch attributes.
//
//   source: <flashinfer/norm.cuh>         # found on the build owner's include roots
//   entry: flashinfer::norm::RMSNormKernel  # a qualified __global__ or __device__ template
//   constexprs:
//     - {name: Activation, type: cpp, values: [kpack_fi::silu, kpack_fi::gelu]}
//   launch:
//     pdl: per_call          # false (default) | true | per_call
//     cluster: [2, 1, 1]     # cluster dimensions (constexpr expressions)
//     cooperative: true
#pragma once

#include <string>

#include "model.h"
#include "yaml_reader.h"

namespace kpack {

// Reads `entry:`: a C identifier for Triton, a possibly qualified C++ name
// for CUDA (the language is read first).
void ReadEntry(FileReader& r, const YAML::Node& v, Kernel& k);

// Resolves `source: <dir/file.cuh>` on k.include_dirs, setting
// k.source_path and k.source_on_include_path.  Errors when the form is
// wrong, the kernel is Triton's, or no include root has the file.
void ResolveIncludedSource(FileReader& r, const YAML::Node& v, const std::string& text, Kernel& k);

// Reads the values of a `type: cpp` constexpr: qualified C++ names, whose
// last components (the specialization's name parts) differ.
void ReadCppNameValues(FileReader& r, const YAML::Node& values, Constexpr& c);

// Reads launch.pdl, launch.cluster and launch.cooperative; `key` is one of them.
void ReadLaunchAttribute(FileReader& r, const std::string& key, const YAML::Node& key_node, const YAML::Node& v,
                         Kernel& k);

// Finds whether the entry is a __global__ template (ScanCudaEntry) and
// checks what follows from it: a __global__ entry's launch bounds are its
// own, not the manifest's.  Triton kernels: refuses cluster and
// cooperative (Triton sets its own).
void CheckCudaEntry(FileReader& r, Kernel& k);

}  // namespace kpack
