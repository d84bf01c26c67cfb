// debug::dump() / inspect(): the manager tree, and each array in the detailed
// form; ManagerRef::debug_dump prints the same text.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "debug_test_util.hpp"
#include "test_util.hpp"

using namespace ndgc;
using test::ends_with;
using test::site_text;
using test::words_of_line;

TEST_CASE("inspect() captures names, UUIDs, counts, bytes, sub-managers and arrays") {
  NDManager m = NDManager::new_base_manager("dump-model");
  NDManager sub = m.new_sub_manager("inner");
  NDArray a = m.ones({2, 2}); int a_line = __LINE__;
  a.set_name("alpha");
  NDArray v = a.reshape({4});
  NDArray b = sub.zeros({3}, DataType::int64);
  { NDArray orphan = m.zeros({5}); }
  m.cap();

  debug::Dump brief = debug::inspect(m);
  CHECK_FALSE(brief.detailed);
  CHECK(brief.root.name == "dump-model");
  CHECK(brief.root.path == "system/dump-model");
  CHECK(brief.root.uuid == m.uid());
  CHECK(brief.root.capped);
  CHECK(brief.root.open);
  CHECK(brief.root.array_count == 3);
  CHECK(brief.root.bytes == 16 + 20);
  CHECK(brief.root.arrays.empty());
  REQUIRE(brief.root.children.size() == 1);
  CHECK(brief.root.children[0].path == "system/dump-model/inner");
  CHECK(brief.root.children[0].bytes == 24);

  debug::Dump full = debug::inspect(m, true);
  REQUIRE(full.root.arrays.size() == 3);
  const debug::ArrayInfo& ia = full.root.arrays[0];  // oldest first
  CHECK(ia.uuid == a.uid());
  CHECK(ia.name == "alpha");
  CHECK(ia.shape == Shape{2, 2});
  CHECK(ia.dtype == DataType::float32);
  CHECK(ia.nbytes == 16);
  CHECK(ia.bytes == 16);
  CHECK_FALSE(ia.view);
  CHECK(ends_with(ia.site.file, "dump_test.cpp"));
  CHECK(ia.site.line == std::uint32_t(a_line));
  CHECK(ia.handles == 1);
  const debug::ArrayInfo& iv = full.root.arrays[1];
  CHECK(iv.view);
  CHECK(iv.nbytes == 16);
  CHECK(iv.bytes == 0);
  CHECK(full.root.arrays[2].handles == 0);
  REQUIRE(full.root.children[0].arrays.size() == 1);
  CHECK(full.root.children[0].arrays[0].dtype == DataType::int64);
}

TEST_CASE("the text dump: one line per manager, one per array, in the documented columns") {
  NDManager m = NDManager::new_base_manager("dump-text");
  NDManager sub = m.new_sub_manager("inner");
  NDArray a = m.ones({2, 2}); int a_line = __LINE__;
  a.set_name("alpha");
  NDArray v = a.reshape({4}); int v_line = __LINE__;
  { NDArray orphan = m.zeros({5}); }
  int orphan_line = __LINE__ - 1;
  NDArray b = sub.zeros({3});

  std::string brief = debug::dump(m);
  std::string expected_first = "system/dump-text [" + m.uid().to_string() + "] cpu(): 3 arrays, 36 B, 1 sub-managers\n";
  CHECK(brief.rfind(expected_first, 0) == 0);
  CHECK(brief.find("\n  inner [" + sub.uid().to_string() + "] cpu(): 1 arrays, 12 B, 0 sub-managers\n") !=
        std::string::npos);
  CHECK(brief.find("alpha") == std::string::npos);

  std::ostringstream out;
  debug::dump(m, out, true);
  std::string full = out.str();
  CHECK(full.find("  - " + a.uid().to_string() + " 'alpha' (2, 2) float32 16 B at ") != std::string::npos);
  std::vector<std::string> wa = words_of_line(full, a.uid().to_string());
  REQUIRE(wa.size() == 11);  // "-" uuid 'alpha' "(2," "2)" float32 16 B at site handles=1
  CHECK(ends_with(wa[9], site_text(__FILE__, a_line)));
  CHECK(wa[10] == "handles=1");
  std::vector<std::string> wv = words_of_line(full, v.uid().to_string());
  REQUIRE(wv.size() == 10);
  CHECK(wv[6] == "(view)");
  CHECK(ends_with(wv[8], site_text(__FILE__, v_line)));
  std::vector<std::string> wo = words_of_line(full, site_text(__FILE__, orphan_line));
  REQUIRE(wo.size() == 10);
  CHECK(wo[8] == "handles=0");
  CHECK(wo[9] == "(orphan)");
  CHECK(full.find("\n    - " + b.uid().to_string() + " (3,) float32 12 B at ") != std::string::npos);

  // ManagerRef::debug_dump is the same dumper.
  CHECK(m.debug_dump(true) == full);
  CHECK(m.debug_dump(false) == brief);
  std::ostringstream via_ref;
  m.debug_dump(via_ref, true);
  CHECK(via_ref.str() == full);

  // The whole tree starts at the system manager and contains this one.
  std::ostringstream all;
  debug::dump(all);
  CHECK(all.str().rfind("system [", 0) == 0);
  CHECK(all.str().find("\n  dump-text [" + m.uid().to_string() + "]") != std::string::npos);
}

TEST_CASE("dump of a closed manager throws ManagerClosed; of an empty reference, InvalidArgument") {
  NDManager m = NDManager::new_base_manager("dump-closed");
  ManagerRef ref = m;
  m.close();
  CHECK_THROWS_WITH_AS(debug::dump(ref), doctest::Contains("debug::dump: manager 'system/dump-closed'"),
                       ManagerClosed);
  CHECK_THROWS_WITH_AS(debug::inspect(ref), doctest::Contains("is closed"), ManagerClosed);
  CHECK_THROWS_WITH_AS(ref.debug_dump(), doctest::Contains("debug_dump: manager 'system/dump-closed'"),
                       ManagerClosed);
  CHECK_THROWS_WITH_AS(debug::dump(ManagerRef()), doctest::Contains("debug::dump: the ManagerRef is empty"),
                       InvalidArgument);
}

TEST_CASE("an unnamed manager dumps as (unnamed) below the root; a closed sub-manager leaves the tree") {
  NDManager m = NDManager::new_base_manager();  // unnamed: the path uses the UUID's first 8 characters
  NDManager sub = m.new_sub_manager();
  debug::Dump d = debug::inspect(m);
  CHECK(d.root.name.empty());
  CHECK(d.root.path == "system/" + m.uid().to_string().substr(0, 8));
  CHECK(d.to_text().find("\n  (unnamed) [") != std::string::npos);
  sub.close();
  CHECK(debug::inspect(m).root.children.empty());  // a closed sub-manager leaves its parent
}

TEST_CASE("dump in JSON writes the same tree") {
  NDManager m = NDManager::new_base_manager("dump-json");
  NDArray a = m.ones({3});
  std::string j = debug::dump(m, true, debug::Format::json);
  CHECK(debug::Dump::from_json(j) == debug::inspect(m, true));
  CHECK(j.find("\"path\": \"system/dump-json\"") != std::string::npos);
}

TEST_CASE("the whole-tree dump ends with the workspaces: name, thread, cycle, capacity, used, spilled") {
  const ndgc::workspace::Config cfg = ndgc::test::fixed_arena(1024);
  ndgc::NDManager m = ndgc::NDManager::new_base_manager("dumped");
  {
    ndgc::workspace::Scope s = ndgc::workspace::activate(cfg, "DUMPED_WS");
    (void)m.ones({64});
    (void)m.ones({512});  // spills
  }
  std::ostringstream out;
  ndgc::debug::dump(out);
  const std::string text = out.str();
  CAPTURE(text);
  CHECK(text.find("workspaces: ") != std::string::npos);
  CHECK(text.find("'DUMPED_WS' thread ") != std::string::npos);
  CHECK(text.find("closed cycle 1: capacity 1.0 KiB, used 256 B") != std::string::npos);
  CHECK(text.find("spilled 2.0 KiB") != std::string::npos);
  ndgc::workspace::destroy("DUMPED_WS");
  std::ostringstream after;
  ndgc::debug::dump(after);
  CHECK(after.str().find("DUMPED_WS") == std::string::npos);
}
