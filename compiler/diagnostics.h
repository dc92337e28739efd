// diagnostics.h - source positions and the error sink every pass reports to.
//
// Every user-facing error has the form `file:line:col: error: message`
// (1-based line and column), so editors and CI logs can jump to it.  Passes
// report into a Diagnostics sink and the driver stops at the checkpoint that
// ends each pass, so one run reports every error of a pass, not just the first.
#pragma once

#include <string>
#include <vector>

namespace kpack {

// A position in a manifest.  `file` is the path as the user gave it (made
// relative to the working directory), never absolutized, so messages are
// stable across machines.
struct SourceLoc {
  std::string file;
  int line = 0;  // 1-based; 0 when unknown
  int col = 0;   // 1-based; 0 when unknown

  // "file:line:col", or "file" when there is no line.
  std::string ToString() const;
};

class Diagnostics {
 public:
  // Records `file:line:col: error: message`.
  void Error(const SourceLoc& loc, const std::string& message);
  // Records `error: message` for errors with no position (I/O, tools).
  void Error(const std::string& message);
  // Records a note that follows the previous error (tool output, context).
  void Note(const std::string& text);

  bool HasErrors() const { return error_count_ > 0; }
  int error_count() const { return error_count_; }
  // All lines recorded so far, in order.
  const std::vector<std::string>& lines() const { return lines_; }
  // The lines joined with '\n' (each line terminated).
  std::string Text() const;

 private:
  std::vector<std::string> lines_;
  int error_count_ = 0;
};

}  // namespace kpack
