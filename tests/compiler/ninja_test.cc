// The unit pool's default depth (compiler/ninja.cc): one job per core,
// capped by physical memory at the per-job reservation.  The rows are
// docs/building.md's table.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "ninja.h"

namespace {
constexpr int64_t kGiB = int64_t{1} << 30;
}

TEST_CASE("the unit pool is as deep as the cores when memory allows", "[ninja]") {
  CHECK(kpack::UnitJobsFor(2, 24 * kGiB, 2048) == 2);    // CI: 12 jobs fit, 2 cores
  CHECK(kpack::UnitJobsFor(64, 256 * kGiB, 2048) == 64);  // 128 fit
}

TEST_CASE("memory caps the unit pool below the cores", "[ninja]") {
  CHECK(kpack::UnitJobsFor(64, 256 * kGiB, 8192) == 32);  // template-heavy kernels
  CHECK(kpack::UnitJobsFor(16, 24 * kGiB, 4096) == 6);    // 6 GiB left over: rounds down
  CHECK(kpack::UnitJobsFor(8, 1 * kGiB, 2048) == 1);      // not one job fits: still one
}

TEST_CASE("the unit pool falls back to the cores when memory is unknown", "[ninja]") {
  CHECK(kpack::UnitJobsFor(8, 0, 2048) == 8);
  CHECK(kpack::UnitJobsFor(8, 24 * kGiB, 0) == 8);
  CHECK(kpack::UnitJobsFor(0, 24 * kGiB, 2048) == 1);  // hardware_concurrency() may say 0
}

TEST_CASE("DefaultUnitJobs reads this machine's cores and memory", "[ninja]") {
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int64_t memory = int64_t{sysconf(_SC_PHYS_PAGES)} * sysconf(_SC_PAGE_SIZE);
  CHECK(kpack::DefaultUnitJobs(1) == std::min<int64_t>(cores, memory >> 20));
  CHECK(kpack::DefaultUnitJobs(memory >> 20) == 1);  // one job takes all the memory
  CHECK(kpack::DefaultUnitJobs((memory >> 20) + 1) == 1);
}
