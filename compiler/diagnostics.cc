#include "diagnostics.h"

namespace kpack {

std::string SourceLoc::ToString() const {
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(col);
}

void Diagnostics::Error(const SourceLoc& loc, const std::string& message) {
  lines_.push_back(loc.ToString() + ": error: " + message);
  ++error_count_;
}

void Diagnostics::Error(const std::string& message) {
  lines_.push_back("error: " + message);
  ++error_count_;
}

void Diagnostics::Note(const std::string& text) { lines_.push_back(text); }

std::string Diagnostics::Text() const {
  std::string out;
  for (const std::string& line : lines_) out += line + "\n";
  return out;
}

}  // namespace kpack
