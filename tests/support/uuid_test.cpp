// UUIDs: version 4, unique, round-trip through text.
#include <doctest/doctest.h>

#include <set>
#include <thread>
#include <vector>

#include <ndgc/ndgc.hpp>

using namespace ndgc;

TEST_CASE("random UUIDs are v4, variant 10xx, and unique") {
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
  for (int i = 0; i < 10000; ++i) {
    Uuid u = Uuid::random();
    CHECK(((u.hi >> 12) & 0xF) == 4);
    CHECK((u.lo >> 62) == 2);
    seen.insert({u.hi, u.lo});
  }
  CHECK(seen.size() == 10000);
}

TEST_CASE("threads draw distinct UUIDs") {
  std::vector<Uuid> a(1000), b(1000);
  std::thread t1([&] { for (auto& u : a) u = Uuid::random(); });
  std::thread t2([&] { for (auto& u : b) u = Uuid::random(); });
  t1.join();
  t2.join();
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
  for (auto& u : a) seen.insert({u.hi, u.lo});
  for (auto& u : b) seen.insert({u.hi, u.lo});
  CHECK(seen.size() == 2000);
}

TEST_CASE("to_string and parse round-trip; bad text is rejected") {
  Uuid u = Uuid::random();
  std::string s = u.to_string();
  CHECK(s.size() == 36);
  CHECK(Uuid::parse(s) == u);
  CHECK(Uuid::parse("00000000-0000-4000-8000-000000000001").lo == 0x8000000000000001ull);
  CHECK_THROWS_WITH_AS(Uuid::parse("not-a-uuid"), doctest::Contains("not-a-uuid"), InvalidArgument);
  CHECK_THROWS_AS(Uuid::parse("00000000-0000-4000-8000-00000000000g"), InvalidArgument);
  CHECK_THROWS_AS(Uuid::parse("000000000-000-4000-8000-000000000001"), InvalidArgument);
}
