// The Catch2 main of the runtime tests (kept apart: it is slow to compile).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
