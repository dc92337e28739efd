// build.h - `kpack build`: the whole pipeline, pass by pass.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "toolchain.h"

namespace kpack {

struct BuildOptions {
  std::string package_path;   // the package file
  std::string header_out;     // generated C header
  std::string launcher_out;   // generated launcher C source
  std::string asm_out;        // generated .S embedding the fatbins
  std::string work_dir;       // translation units, cubins, fatbins
  std::string cache_dir;      // unit cache; default <work_dir>/cache
  std::string depfile_out;    // optional Make depfile for Ninja
  std::string inventory_out;  // optional JSON inventory (inventory.h)
  std::string tuner_out;      // optional tuning harness tables (tuner_gen.h, --tuner)
  std::string root = ".";     // project root: the header banner's paths are
                              // relative to it; manifests and sources lie in it
  bool allow_outside_root = false;  // let manifests name files outside root
  std::string cuda_root = "/usr/local/cuda";
  std::string python = "python3";   // for Triton kernels
  std::string triton_helper;        // triton_helper.py; default: beside kpack, else ../share/kpack/triton
  std::vector<std::string> python_path;  // Triton kernels' packages (--python-path)
  std::vector<std::string> include_dirs;  // header-only libraries' roots (-I)
  std::string archs;          // "sm_80,sm_90" overrides the manifests
  std::string compress_mode;  // fatbinary --compress-mode, "" for default
  int jobs = 0;               // unit pool depth; 0: DefaultUnitJobs
  int triton_timeout_s = 0;   // per Triton compile (triton_server.h); 0: KPACK_TRITON_TIMEOUT or 600
  int64_t job_memory_mib = 2048;  // memory to reserve per unit job (for jobs = 0)
  int batch = 0;              // specializations per nvcc run for every kernel; 0: the manifests'
  std::string ninja = "ninja";    // runs the units; "none": threads in kpack
  std::string nvcc_launcher;  // run nvcc through this (ccache, sccache)
  bool quiet = false;         // no Ninja status line
  bool header_only = false;   // `kpack header`: load, expand, generate
  bool perf = false;          // print per-pass times
  bool verbose = false;       // print unit counts
  bool allow_debug_kernels = false;  // a development build: no release guard
  // A tuning file whose kernel's manifest changed (tuning_reader.h) is a
  // warning and the rules decide there, rather than an error.
  bool allow_stale_tuning = false;
};

// Runs the pipeline.  Errors go to `err` as `file:line:col: error: ...`
// lines; outputs are written (atomically) only when every pass succeeded.
// Returns the process exit code: 0, or 1 on errors.
int RunBuild(const BuildOptions& options, ToolRunner& runner, std::ostream& err);

}  // namespace kpack
