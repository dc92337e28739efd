// tune_command.h - `kpack tune`: runs a package's tuning harness (built by
// Meson from `kpack build --tuner`, tuner_gen.h) on this machine's GPU,
// checks that it was built from the manifests at hand, shows its progress,
// and writes the tuning file (tuning_writer.h) and the report
// (tune_report.h).  docs/tuning.md is the user's view.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "expand.h"
#include "model.h"
#include "toolchain.h"

namespace kpack {

struct TuneOptions {
  std::string package_path;          // the package file
  std::string tuner;                 // the harness executable
  std::string out_dir;               // -o: DIR/<gpu slug>.yaml
  std::string report_path;           // --report; default DIR/<gpu slug>.html
  std::vector<std::string> kernels;  // --kernel, repeatable; empty: every tuned kernel
  int repeats = 25;                  // timed batches per measurement
  int device = 0;                    // CUDA device ordinal
  std::string driver;                // hidden --driver: the harness loads this driver (tests' fake)
  // Loading the package as `kpack build` does (the hashes depend on it).
  std::string root = ".";
  bool allow_outside_root = false;
  std::string python = "python3";
  std::string triton_helper;
  std::vector<std::string> python_path;
  std::vector<std::string> include_dirs;
  bool perf = false;  // per-pass times
  bool tty = false;   // stderr is a terminal: progress redraws one line
};

// The tuner is run through this seam: --list through ToolRunner::Run, and
// --run line by line as it prints, for the progress.
class TunerRunner : public ToolRunner {
 public:
  // Runs argv, calling on_line with each line of its output (stdout and
  // stderr; no newline) as it arrives.  The result's output holds the last
  // lines.  This default runs Run() and then hands over its lines, which is
  // all a test's fake needs.
  virtual ToolResult RunLines(const std::vector<std::string>& argv,
                              const std::function<void(const std::string&)>& on_line);
};

// The real one: posix_spawn, stdout and stderr through one pipe.
class ProcessTunerRunner : public TunerRunner {
 public:
  ToolResult Run(const std::vector<std::string>& argv) override;
  ToolResult RunLines(const std::vector<std::string>& argv,
                      const std::function<void(const std::string&)>& on_line) override;
};

// Seconds on a monotonic clock, for the progress.
using TuneClock = std::function<double()>;
double SteadySeconds();

// Loads and expands the package, then TunePackage.  Errors go to `err`
// (`kpack: error: ...`, or located for manifest problems); progress too.
// Returns 0, or 1 with nothing written.
int RunTune(const TuneOptions& options, TunerRunner& runner, std::ostream& err, const TuneClock& clock = SteadySeconds);

// Tunes a package already loaded: `specs` are Expand(pkg)'s.
int TunePackage(const Package& pkg, const std::vector<Specialization>& specs, const TuneOptions& options,
                TunerRunner& runner, std::ostream& err, const TuneClock& clock = SteadySeconds);

}  // namespace kpack
