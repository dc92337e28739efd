// toolchain.h - running external tools (nvcc, fatbinary) without a shell.
//
// Every tool is started with an argv vector through posix_spawn: no shell
// ever parses a manifest-provided string, so names and flags with spaces,
// quotes or `;` are passed through verbatim.  The ToolRunner interface is
// the seam tests use to fake the toolkit.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kpack {

struct ToolResult {
  int exit_code = -1;         // the tool's exit status; -1 when not run
  std::string output;         // stdout and stderr, interleaved
  std::string spawn_error;    // non-empty when the tool could not be started
  int signal = 0;             // the signal that killed it (exit_code 128 + signal); 0: none
  double cpu_seconds = 0;     // user + system time of the tool and the children it waited for
  bool ok() const { return spawn_error.empty() && exit_code == 0; }
};

class ToolRunner {
 public:
  virtual ~ToolRunner() = default;
  // Runs argv[0] (a path, or a name looked up in PATH) with argv.
  // Thread-safe: the compile pass calls it from several threads.
  virtual ToolResult Run(const std::vector<std::string>& argv) = 0;
};

// The real thing: posix_spawnp with stdout and stderr captured.
class ProcessRunner : public ToolRunner {
 public:
  ToolResult Run(const std::vector<std::string>& argv) override;
};

// Runs argv as ProcessRunner does, handing its output (stdout and stderr,
// interleaved) to on_output chunk by chunk as it comes, rather than
// keeping it: for a child whose progress matters while it runs.  The
// result's output is empty; exit_code is 128 + N for a child killed by
// signal N.
ToolResult RunStreaming(const std::vector<std::string>& argv,
                        const std::function<void(const char* data, size_t size)>& on_output);

// Runs argv with this process's stdout and stderr, so a child that draws a
// progress line (Ninja) reaches the terminal live.  Returns the exit code,
// or -1 with *spawn_error set when it could not be started.
int RunWithInheritedOutput(const std::vector<std::string>& argv, std::string* spawn_error);

// Where the CUDA tools are and which toolkit they belong to.
struct Toolchain {
  std::string nvcc = "/usr/local/cuda/bin/nvcc";
  std::string fatbinary = "/usr/local/cuda/bin/fatbinary";
  std::string version;  // `nvcc --version` output: part of every cache key
};

// Fills toolchain.version by running `nvcc --version`.  Returns an empty
// string on success, else a message that says how to fix it.
std::string ProbeToolchain(ToolRunner& runner, Toolchain& toolchain);

// One line for messages: the argv joined with spaces, each argument with
// spaces or quotes single-quoted (for people to read, never to execute).
std::string FormatCommand(const std::vector<std::string>& argv);

}  // namespace kpack
