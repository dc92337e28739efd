// pass_timer.h - the per-pass timers of `--perf` (kpack build's passes,
// kpack tune's steps): "kpack: <pass> <ms> ms" when the scope ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>

namespace kpack {

// Times one pass from construction to destruction; prints it when enabled.
class PassTimer {
 public:
  PassTimer(const char* name, bool enabled, std::ostream& out)
      : name_(name), enabled_(enabled), out_(out), start_(std::chrono::steady_clock::now()) {}
  ~PassTimer() {
    if (!enabled_) return;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    out_ << "kpack: " << name_ << " " << static_cast<int64_t>(ms * 1000) / 1000.0 << " ms\n";
  }
  PassTimer(const PassTimer&) = delete;
  PassTimer& operator=(const PassTimer&) = delete;

 private:
  const char* name_;
  bool enabled_;
  std::ostream& out_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kpack
