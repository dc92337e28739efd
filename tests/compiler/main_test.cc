// One Catch2 main for each compiler test executable.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
