// version.h - kpack's version and the runtime ABI its generated code targets.
#pragma once

namespace kpack {

// Keep in step with project() in meson.build and KPACK_VERSION_* in
// runtime/kpack.h (tests/compiler/version_test.cc checks that all three agree).
inline constexpr const char* kKpackVersion = "0.1.0";
// KPACK_ABI_VERSION of runtime/kpack.h: generated launchers record it and
// static_assert it, and the runtime compares it at first use.
inline constexpr int kAbiVersion = 1;

}  // namespace kpack
