// triton_server.h - a persistent Triton compiler process per job slot.
//
// Importing Triton costs each `triton_helper.py compile` process 0.3-0.4 s
// of CPU, more than many kernels take to compile.  So a unit's step hands
// its request to a long-lived `triton_helper.py serve SOCKET` process
// instead, over a Unix socket, and Ninja's edges stay one `kpack step` per
// unit.  The build has N slots (KPACK_TRITON_SLOTS, which `kpack build` sets
// to its unit job count), each with at most one server, in
//   <work_dir>/triton/<id>/slot-<i>.lock  held (flock) by the client using the slot
//   <work_dir>/triton/<id>/slot-<i>.sock  the server's socket
//   <work_dir>/triton/<id>/slot-<i>.pid   the server's pid, written by its starter
//   <work_dir>/triton/<id>/slot-<i>.log   the server's stdout and stderr
//   <work_dir>/triton/<id>/slot-<i>.sock.out  a compile's output, while it runs
// where <id> hashes the Python, the helper and the Triton version.
// A compile takes the first free slot (blocking on one when all are busy),
// and starts the slot's server when none listens.  Servers run in their own
// session with no descriptor of the step's (Ninja waits for the step's
// pipes to close), and `kpack build` stops them all when its compile ends;
// one whose kpack was killed exits after 60 s without a connection.
//
// The protocol (newline-delimited JSON): on each connection the server
// first sends {"pid", "startup_cpu", "triton_version"}; the client sends
// {"op": "compile", "request", "cubin", "meta", "cwd"} and reads
// {"ok", "error", "cpu", "compile_cpu"}, or sends {"op": "quit"}.
//
// A server that dies while compiling, or takes longer than the timeout
// (KPACK_TRITON_TIMEOUT seconds, then it is killed), is reported with one
// line on stderr and the unit retried once in a fresh process; a second
// such failure is the unit's error.  KPACK_TRITON_SERVER=0 turns all this
// off: every unit runs its own `triton_helper.py compile` (compile.cc).
#pragma once

#include <ostream>
#include <string>

namespace kpack {

inline constexpr const char* kTritonSlotsVariable = "KPACK_TRITON_SLOTS";
inline constexpr const char* kTritonTimeoutVariable = "KPACK_TRITON_TIMEOUT";
inline constexpr const char* kTritonServerVariable = "KPACK_TRITON_SERVER";
// What `kpack build` probed of its Triton ("triton 3.6.0 python 3.12.3"):
// servers are kept apart by it (TritonServerOptionsFor).
inline constexpr const char* kTritonIdentityVariable = "KPACK_TRITON_IDENTITY";

struct TritonServerOptions {
  std::string python = "python3";
  std::string helper;  // triton_helper.py
  std::string dir;     // <work_dir>/triton
  int slots = 1;
  double timeout_s = 600;  // per compile, and for a server's start-up
  double idle_s = 60;      // a server exits after this long without a client
};

// The options of a build's work directory, with the slots and the timeout
// from the environment (default: hardware concurrency, 600 s).
TritonServerOptions TritonServerOptionsFor(const std::string& python, const std::string& helper,
                                           const std::string& work_dir);

// Whether units compile through servers (KPACK_TRITON_SERVER is not "0").
bool TritonServerEnabled();

// One unit's compile: the helper's request file and where its outputs go
// (paths relative to this process's directory, which the server adopts).
struct TritonCompile {
  std::string request, cubin, meta;
  std::string label;  // "kernel 'k' specialization s (...) for sm_90"
};

struct TritonServerReply {
  bool ok = false;      // the cubin and the metadata were written
  std::string output;   // !ok: the helper's output, as `compile` prints it
  // Non-empty when no answer came (the server failed twice, or at
  // start-up): the unit's whole error text, "Triton failed (...) for
  // <label>", the server's command line, then its log's last lines.
  std::string failure;
  double cpu = 0;          // the server's CPU for this request
  double compile_cpu = 0;  // the part inside triton.compile
  double startup_cpu = 0;  // of the servers this compile started
  int started = 0;         // servers this compile started
};

// Compiles through a slot's server.  Thread-safe; the retry's one line
// goes to `err`.
TritonServerReply CompileOnTritonServer(const TritonServerOptions& options, const TritonCompile& compile,
                                        std::ostream& err);

// Stops every server of `dir` (<work_dir>/triton): asks each to quit,
// kills any still running 2 s later, and removes their sockets and pid
// files.  For `kpack build` after its compile, success or failure.
void StopTritonServers(const std::string& dir);

}  // namespace kpack
