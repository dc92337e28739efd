// triton.h - Triton kernels as a source language: the request kpack hands
// to triton_helper.py for one (specialization, arch), and the metadata it
// hands back.  Python runs at build time only; the launchers and runtime
// are the same as for CUDA kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "expand.h"
#include "tensordesc.h"
#include "toolchain.h"

namespace kpack {

// Triton's spelling of a parameter type: "*fp16", "i64", "i1".
std::string TritonType(const Specialization& s, const ParamType& t);

// The JSON request for compiling `s` for `arch` (see triton_helper.py).
std::string TritonRequest(const Specialization& s, const Arch& arch);

// Triton's global or profile scratch: bytes per CTA and their alignment.
struct TritonScratch {
  uint32_t size = 0;
  uint32_t align = 1;
  bool operator==(const TritonScratch&) const = default;
};

// What Triton decided for one compiled unit.
struct TritonMeta {
  std::string name;                 // the kernel symbol in the cubin
  uint32_t shared = 0;              // dynamic shared memory per launch (per CTA)
  uint32_t num_warps = 4;           // the block is 32 x num_warps threads
  uint32_t num_ctas = 1;            // CTAs per cluster (program)
  uint32_t hidden_pointer_params = 0;  // appended by Triton: global, profile scratch
  TritonScratch global_scratch, profile_scratch;
  std::vector<DescLayout> descs;       // each tensordesc param's TMA layout, in order
  std::vector<std::string> inputs;     // every file the kernel was made from
};

// Parses the helper's metadata JSON; nullopt with *error on malformed input.
std::optional<TritonMeta> ParseTritonMeta(const std::string& json, std::string* error);

// Where Python and the helper are.
struct TritonTools {
  std::string python = "python3";
  std::string helper;   // triton_helper.py
  std::string version;  // filled by ProbeTriton: part of every cache key
};

// Runs the helper's `version`; an empty string on success, else a message
// that says how to install what is missing.
std::string ProbeTriton(ToolRunner& runner, TritonTools& tools);

// The Triton versions triton_helper.py supports (its SUPPORTED_TRITON).
inline constexpr const char* kTritonVersions = "3.6 to 3.9";

// "3.6.0" of the helper's `version` line ("triton 3.6.0 python 3.11.7");
// "" when `probed` is not one.
std::string TritonVersionNumber(const std::string& probed);

// What to tell a user whose Python cannot run Triton's compiler (`why`).
std::string TritonMissingMessage(std::string why);

}  // namespace kpack
