// NDArray handles: counts, copies, moves, empty handles, identity (docs/design.md §3).
#include <doctest/doctest.h>

#include "test_util.hpp"

using namespace ndgc;

TEST_CASE("copies share one key; moves transfer it") {
  NDManager m = NDManager::new_base_manager("handles");
  NDArray a = m.ones({2});
  CHECK(a.handle_count() == 1);
  NDArray b = a;
  CHECK(a.handle_count() == 2);
  CHECK(b.same(a));
  NDArray c = std::move(b);
  CHECK(a.handle_count() == 2);
  CHECK_FALSE(b.defined());
  c.reset();
  CHECK(a.handle_count() == 1);
  a = a;  // self-assignment keeps the handle
  CHECK(a.handle_count() == 1);
}

TEST_CASE("an empty handle throws InvalidArgument naming the operation") {
  NDArray empty;
  CHECK_FALSE(empty.defined());
  CHECK(empty.is_closed());
  CHECK(empty.handle_count() == 0);
  CHECK_THROWS_WITH_AS(empty.shape(), doctest::Contains("shape: the NDArray handle is empty"), InvalidArgument);
  CHECK_THROWS_WITH_AS(empty.add(empty), doctest::Contains("add"), InvalidArgument);
  CHECK_THROWS_AS(empty.uid(), InvalidArgument);
  empty.close();  // closing nothing is fine
}

TEST_CASE("identity: UUIDs are unique v4 and survive close") {
  NDManager m = NDManager::new_base_manager("ids");
  NDArray a = m.ones({1}), b = m.ones({1});
  CHECK(a.uid() != b.uid());
  std::string s = a.uid().to_string();
  CHECK(s.size() == 36);
  CHECK(s[14] == '4');
  Uuid before = a.uid();
  a.close();
  CHECK(a.uid() == before);
}

TEST_CASE("a stale handle never resolves to the array that reused its slot") {
  NDManager m = NDManager::new_base_manager("reuse");
  NDArray old = m.full({1}, 1.0);
  old.close();
  // The freed slot is reused by the next arrays; the old handle's generation no longer matches.
  std::vector<NDArray> fresh;
  for (int i = 0; i < 8; ++i) fresh.push_back(m.full({1}, 2.0));
  CHECK(old.is_closed());
  CHECK_THROWS_AS(old.to_vector<float>(), ArrayClosed);
  for (auto& f : fresh) CHECK(f.item<float>() == 2.0f);
}

TEST_CASE("names and metadata") {
  NDManager m = NDManager::new_base_manager("meta");
  NDArray a = m.zeros({2, 3}, DataType::float64);
  a.set_name("w");
  CHECK(a.name() == "w");
  CHECK(a.shape() == Shape{2, 3});
  CHECK(a.shape().size() == 6);
  CHECK(a.rank() == 2);
  CHECK(a.dtype() == DataType::float64);
  CHECK(a.nbytes() == 48);
  CHECK(a.device() == Device::cpu());
  CHECK(a.is_contiguous());
  CHECK_FALSE(a.transpose().is_contiguous());
  CHECK(a.creation_site().line() == __LINE__ - 11);
}

TEST_CASE("explicit close: idempotent, frees the buffer with the last view") {
  NDManager m = NDManager::new_base_manager("close");
  std::uint64_t before = test::host_bytes();
  NDArray a = m.zeros({1024});
  NDArray v = a.reshape({32, 32});
  a.close();
  a.close();
  CHECK(a.is_closed());
  CHECK_FALSE(v.is_closed());
  CHECK(test::host_bytes() == before + 4096);  // the view still holds the storage
  v.close();
  CHECK(test::host_bytes() == before);
  CHECK(m.array_count() == 0);
}

TEST_CASE("close tracking: errors say where the array was closed") {
  NDManager m = NDManager::new_base_manager("track");
  NDArray a = m.ones({1});
  a.set_name("tracked");
  CHECK_THROWS_WITH_AS(
      [&] {
        NDArray b = m.ones({1});
        b.close();
        b.sum();
      }(),
      doctest::Contains("NDGC_TRACK_CLOSE=1"), ArrayClosed);
}

TEST_CASE("close tracking on: the message names the file and line of the close") {
  debug::set_track_close(true);
  NDManager m = NDManager::new_base_manager("tracked-manager");
  NDArray b = m.ones({1});
  b.close();
  int line = __LINE__ - 1;
  CHECK_THROWS_WITH_AS(b.sum(), doctest::Contains(("handle_test.cpp:" + std::to_string(line)).c_str()), ArrayClosed);
  NDArray c = m.ones({1});
  m.close();
  line = __LINE__ - 1;
  CHECK_THROWS_WITH_AS(c.sum(), doctest::Contains(("handle_test.cpp:" + std::to_string(line)).c_str()), ArrayClosed);
  debug::set_track_close(false);
  CHECK_FALSE(debug::track_close());
}
