// kpack's version lives in three places that must agree: meson.build's
// project() (passed in as $KPACK_PROJECT_VERSION), compiler/version.h and
// runtime/kpack.h; and the ABI that codegen writes is the runtime's.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "kpack.h"
#include "version.h"

TEST_CASE("the compiler, the runtime header and meson.build agree on the version and ABI") {
  const char* project = std::getenv("KPACK_PROJECT_VERSION");
  REQUIRE(project != nullptr);
  CHECK(std::string(kpack::kKpackVersion) == project);
  CHECK(std::string(KPACK_VERSION_STRING) == project);
  CHECK(std::to_string(KPACK_VERSION_MAJOR) + "." + std::to_string(KPACK_VERSION_MINOR) + "." +
            std::to_string(KPACK_VERSION_PATCH) == project);
  CHECK(kpack::kAbiVersion == KPACK_ABI_VERSION);
}
