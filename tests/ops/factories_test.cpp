#include <doctest/doctest.h>
#include <ndgc/ndgc.hpp>
TEST_CASE("placeholder") {}
