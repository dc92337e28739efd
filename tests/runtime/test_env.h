/*
 * test_env.h - shared set-up for the runtime tests: the fake driver's
 * control interface, FakeDriver, which gives each test a freshly reset
 * fake and an unloaded runtime pointed at it, and use_lean(), which swaps
 * in the lean fake.
 *
 * meson passes the fake's paths in the environment: FAKE_CUDA_PATH
 * (libfakecuda.so), FAKE_CUDA_OLD_PATH (libfakecuda_old.so, a "driver"
 * without the CUDA 12 library API) and FAKE_CUDA_LEAN_PATH
 * (libfakecuda_lean.so, with only the entry points the runtime resolves
 * when it loads the driver).
 */
#ifndef KPACK_TEST_ENV_H
#define KPACK_TEST_ENV_H

#include "fake_cuda.h"
#include "fixtures.h"
#include "kpack.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <latch>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kpack_test {

/* The value of environment variable `name`, or "" when unset. */
inline std::string env_path(const char *name) {
  const char *value = std::getenv(name);
  return value != nullptr ? value : "";
}

/* Path of libfakecuda.so. */
inline const std::string &fake_path() {
  static const std::string path = env_path("FAKE_CUDA_PATH");
  return path;
}

/*
 * The control functions of the fake at `path` (a build of fake_cuda.c),
 * bound once per path; nullptr if it does not load or lacks a function.
 * The dlopen handle is kept for the life of the process, so the fake stays
 * loaded (and these pointers valid) when kpack_unload_all() dlcloses the
 * runtime's reference.
 */
inline const fake_cuda_api *fake_api_at(const std::string &path) {
  static std::mutex lock;
  static std::map<std::string, fake_cuda_api> bound;
  std::lock_guard<std::mutex> hold(lock);
  auto it = bound.find(path);
  if (it == bound.end()) {
    fake_cuda_api api{};
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr || fake_cuda_bind(&api, handle) != 0) {
      return nullptr;
    }
    it = bound.emplace(path, api).first;
  }
  return &it->second;
}

/* The control functions of libfakecuda.so. */
inline const fake_cuda_api *fake_api() { return fake_api_at(fake_path()); }

/*
 * Per-test environment: unloads the runtime, resets the fake (one sm_80
 * device, current on every thread) and points the runtime at it; unloads
 * again at the end so that no test sees another's state.
 */
class FakeDriver {
 public:
  FakeDriver() {
    REQUIRE_FALSE(fake_path().empty()); // FAKE_CUDA_PATH must be set
    api_ = fake_api();
    REQUIRE(api_ != nullptr);           // the fake must load and export its API
    kpack_unload_all();
    api_->reset();
    fx_set_driver_path(fake_path().c_str());
  }
  ~FakeDriver() {
    kpack_unload_all();
    fx_set_driver_path(fake_path().c_str());
  }
  FakeDriver(const FakeDriver &) = delete;
  FakeDriver &operator=(const FakeDriver &) = delete;

  const fake_cuda_api &operator*() const { return *api_; }
  const fake_cuda_api *operator->() const { return api_; }

  /* Calls of `function` the fake has seen since the reset. */
  unsigned long long count(const char *function) const { return api_->count(function); }

 private:
  const fake_cuda_api *api_ = nullptr;
};

/* The calling thread's last error detail, as a std::string. */
inline std::string detail() { return kpack_last_error_detail(); }

/* Runs `body(thread_index)` on `count` threads released together.  Catch2
   is not thread-safe: bodies record what they saw, and the test checks it
   after race() returns. */
template <typename Body>
void race(int count, Body body) {
  std::latch start(count);
  std::vector<std::thread> threads;
  threads.reserve(count);
  for (int t = 0; t < count; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
    });
  }
  for (std::thread &thread : threads) {
    thread.join();
  }
}

/* Path of libfakecuda_lean.so: only the entry points the runtime resolves
   when it loads the driver. */
inline const std::string &lean_path() {
  static const std::string path = env_path("FAKE_CUDA_LEAN_PATH");
  return path;
}

/* What the runtime says of a driver at `path` that lacks `symbol`. */
inline std::string too_old(const std::string &path, const char *symbol) {
  return path + " has no " + symbol +
         ": the NVIDIA driver is too old; kpack needs a driver for CUDA 12.0 or newer";
}

/*
 * Makes the lean fake, reset, the runtime's next driver and returns its
 * controls.  `initialized`: CUDA is initialized and device 0 current, as
 * after the application's cudaSetDevice(0).  Call after FakeDriver's
 * construction (which unloads the runtime); its destruction unloads again.
 */
inline const fake_cuda_api &use_lean(bool initialized) {
  REQUIRE_FALSE(lean_path().empty()); // FAKE_CUDA_LEAN_PATH must be set
  const fake_cuda_api *lean = fake_api_at(lean_path());
  REQUIRE(lean != nullptr);
  lean->reset();
  lean->set_initialized(initialized ? 1 : 0);
  fx_set_driver_path(lean_path().c_str());
  return *lean;
}

} // namespace kpack_test

#endif // KPACK_TEST_ENV_H
