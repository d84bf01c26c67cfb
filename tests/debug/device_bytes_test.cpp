// Bytes per device in the debug reports (src/debug/device_bytes.cpp and its
// uses in dump, snapshot, diff and their JSON), on the simulated GPU
// (tests/sim_gpu.hpp): a manager holding arrays on the CPU and on gpu(0)
// (to_device's copy joins its source's manager) is summed per device; the
// text names devices only where a GPU is involved; JSON round trips, and
// documents written before devices were reported still read.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "debug_test_util.hpp"
#include "sim_gpu.hpp"

using namespace ndgc;
using nlohmann::json;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The records of `s` held by the manager at `path`.
std::vector<debug::ArrayRecord> records_of(const debug::Snapshot& s, const std::string& path) {
  std::vector<debug::ArrayRecord> out;
  for (const debug::ArrayRecord& a : s.arrays)
    if (s.manager_of(a) == path) out.push_back(a);
  return out;
}

}  // namespace

TEST_CASE("DeviceBytes lists: device order, sums, lookup and text") {
  const std::vector<debug::DeviceBytes> none;
  CHECK(debug::to_string(none) == "no arrays");
  CHECK(debug::bytes_on(none, Device::gpu(0)) == 0);
  const std::vector<debug::DeviceBytes> two{{Device::cpu(), 3, 2048}, {Device::gpu(1), 1, 4 << 20}};
  CHECK(debug::to_string(two) == "cpu() 2.0 KiB in 3 arrays, gpu(1) 4.0 MiB in 1 arrays");
  CHECK(debug::bytes_on(two, Device::gpu(1)) == 4 << 20);
  CHECK(debug::bytes_on(two, Device::gpu(0)) == 0);
}

TEST_CASE("dump: a manager's bytes per device, each array's device, the tree's total per device") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("dev-host");
  NDArray h = host.zeros({256});                    // 1 KiB on the CPU
  NDArray g = h.to_device(Device::gpu(0));          // 1 KiB on gpu(0), in the host's manager
  NDArray g2 = host.ones({512}).to_device(Device::gpu(0));  // and another 2 KiB there
  NDManager on_gpu = NDManager::new_base_manager("dev-gpu", Device::gpu(0));
  NDArray d = on_gpu.ones({1024});                  // 4 KiB on gpu(0)

  const debug::Dump dump = debug::inspect(host, true);
  const std::vector<debug::DeviceBytes> want{{Device::cpu(), 2, 1024 + 2048}, {Device::gpu(0), 2, 1024 + 2048}};
  CHECK(dump.root.devices == want);
  CHECK(dump.root.bytes == 2 * (1024 + 2048));
  REQUIRE(dump.root.arrays.size() == 4);
  CHECK(dump.root.arrays[0].device == Device::cpu());
  CHECK(dump.root.arrays[1].device == Device::gpu(0));
  const std::string text = dump.to_text();
  CAPTURE(text);
  CHECK(contains(text, "4 arrays, 6.0 KiB, 0 sub-managers; by device: cpu() 3.0 KiB in 2 arrays, gpu(0) 3.0 KiB in 2 arrays\n"));
  CHECK(contains(text, "handles=1 on gpu(0)\n"));
  CHECK(contains(text, "by device: cpu() 3.0 KiB in 2 arrays, gpu(0) 3.0 KiB in 2 arrays\n"));  // the tree's total

  const debug::Dump gpu_dump = debug::inspect(on_gpu);
  CHECK(gpu_dump.root.devices == std::vector<debug::DeviceBytes>{{Device::gpu(0), 1, 4096}});
  CHECK(contains(gpu_dump.to_text(), "gpu(0): 1 arrays, 4.0 KiB, 0 sub-managers; by device: gpu(0) 4.0 KiB in 1 arrays"));

  // Below a manager: its sub-managers count too.
  NDManager step = host.new_sub_manager("step", Device::gpu(0));
  NDArray s = step.zeros({256});
  const std::vector<debug::DeviceBytes> below = debug::inspect(host).root.devices_below();
  CHECK(below == std::vector<debug::DeviceBytes>{{Device::cpu(), 2, 3072}, {Device::gpu(0), 3, 4096}});

  // The whole tree's dump ends with the same sums, over every manager.
  std::ostringstream whole;
  debug::dump(whole);
  CHECK(contains(whole.str(), "\nby device: "));
}

TEST_CASE("dump: a CPU-only tree prints as before, without devices") {
  test::SimGpu gpu;  // a GPU is there, but this tree does not use it
  NDManager host = NDManager::new_base_manager("dev-cpu-only");
  NDArray a = host.zeros({4});
  const std::string text = debug::inspect(host, true).to_text();
  CHECK_FALSE(contains(text, "by device"));
  CHECK_FALSE(contains(text, " on cpu()"));
}

TEST_CASE("dump JSON: devices round trip; a document without them reads as all on the manager's device") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("dev-json");
  NDArray h = host.zeros({256});
  NDArray g = h.to_device(Device::gpu(0));
  for (bool detailed : {false, true}) {
    const debug::Dump d = debug::inspect(host, detailed);
    CHECK(debug::Dump::from_json(d.to_json()) == d);
  }
  json old = json::parse(debug::inspect(host, true).to_json());
  old["root"].erase("devices");
  for (json& a : old["root"]["arrays"]) a.erase("device");
  const debug::Dump back = debug::Dump::from_json(old.dump());
  CHECK(back.root.devices == std::vector<debug::DeviceBytes>{{Device::cpu(), 2, 2048}});
  for (const debug::ArrayInfo& a : back.root.arrays) CHECK(a.device == Device::cpu());
  json bad = json::parse(debug::inspect(host).to_json());
  bad["root"]["devices"][1]["device"] = "tpu(0)";
  CHECK_THROWS_WITH_AS(debug::Dump::from_json(bad.dump()), doctest::Contains("root.devices[1].device"), DataError);
}

TEST_CASE("snapshot: each array's device, bytes per device, groups on a GPU say so; JSON round trip") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("dev-snap");
  const std::string path = debug::inspect(host).root.path;
  NDArray h = host.zeros({256});
  NDArray g = h.to_device(Device::gpu(0));
  const int g2_line = __LINE__ + 1;
  NDArray g2 = g.add(g);  // on gpu(0), in the same manager
  const debug::Snapshot snap = debug::snapshot();
  const std::vector<debug::ArrayRecord> mine = records_of(snap, path);
  REQUIRE(mine.size() == 3);
  std::size_t on_gpu = 0;
  for (const debug::ArrayRecord& a : mine) on_gpu += a.device == Device::gpu(0);
  CHECK(on_gpu == 2);
  CHECK(debug::bytes_on(snap.devices(), Device::gpu(0)) == 2048);  // nothing else is on gpu(0)
  const std::string text = snap.to_text();
  CAPTURE(text);
  CHECK(contains(text, "; by device: cpu() "));
  CHECK(contains(text, ", gpu(0) 2.0 KiB in 2 arrays\n"));
  CHECK(contains(text, test::site_text(__FILE__, g2_line) + "  on gpu(0)\n"));  // g2's group
  const debug::Snapshot back = debug::Snapshot::from_json(snap.to_json());
  CHECK(back == snap);
  // Written before devices: no "array_devices", every array on the CPU.
  json old = json::parse(snap.to_json());
  old.erase("array_devices");
  const debug::Snapshot cpu_only = debug::Snapshot::from_json(old.dump());
  for (const debug::ArrayRecord& a : cpu_only.arrays) CHECK(a.device == Device::cpu());
  json bad = json::parse(snap.to_json());
  bad["array_devices"][0][1] = "gpu(99)";
  CHECK_THROWS_WITH_AS(debug::Snapshot::from_json(bad.dump()), doctest::Contains("array_devices[0].device"),
                       DataError);
}

TEST_CASE("diff: growth per device in the totals and the groups; JSON round trip; old documents read") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("dev-diff");
  NDManager model = NDManager::new_base_manager("dev-diff-gpu", Device::gpu(0));
  NDArray w = model.ones({256});
  const debug::Snapshot before = debug::snapshot();
  std::vector<NDArray> leaked;
  for (int i = 0; i < 4; ++i) leaked.push_back(w.square());  // 4 × 1 KiB on gpu(0), in the model's manager
  leaked.push_back(host.zeros({128}));                      // 512 B on the CPU
  const debug::Diff d = debug::diff(before, debug::snapshot());
  CHECK(d.byte_growth(Device::gpu(0)) == 4096);
  CHECK(d.byte_growth(Device::cpu()) == 512);
  CHECK(d.byte_growth() == 4096 + 512);
  REQUIRE(d.groups.size() == 2);
  CHECK(d.groups[0].device == Device::gpu(0));
  CHECK(d.groups[0].array_growth() == 4);
  CHECK(d.groups[1].device == Device::cpu());
  const std::string text = d.to_text();
  CAPTURE(text);
  CHECK(contains(text, "; cpu() +512 B (before "));
  CHECK(contains(text, "; gpu(0) +4.0 KiB (before 1.0 KiB, after 5.0 KiB)\n"));
  CHECK(contains(text, "+4     +4.0 KiB  " + debug::inspect(model).root.path));
  CHECK(contains(text, "  on gpu(0)\n"));
  CHECK(debug::Diff::from_json(d.to_json()) == d);
  CHECK(debug::Diff::from_json(d.growing().to_json()) == d.growing());

  json old = json::parse(d.to_json());
  old["before"].erase("devices");
  old["after"].erase("devices");
  for (json& g : old["groups"]) g.erase("device");
  const debug::Diff back = debug::Diff::from_json(old.dump());
  CHECK(back.before.devices ==
        std::vector<debug::DeviceBytes>{{Device::cpu(), d.before.arrays, d.before.bytes}});  // all on the CPU
  for (const debug::DiffGroup& g : back.groups) CHECK(g.device == Device::cpu());
  // A CPU-only diff reads as before.
  const debug::Snapshot cpu_before = debug::snapshot();
  NDArray more = host.zeros({8});
  const std::string cpu_text = debug::diff(cpu_before, debug::snapshot()).to_text();
  CHECK(contains(cpu_text, "; gpu(0) 0 B (before 5.0 KiB, after 5.0 KiB)"));  // held in both snapshots: still shown
  model.close();
  leaked.clear();
  const debug::Snapshot no_gpu_before = debug::snapshot();
  NDArray again = host.zeros({8});
  const std::string plain = debug::diff(no_gpu_before, debug::snapshot()).to_text();
  CHECK_FALSE(contains(plain, "gpu(0)"));
  CHECK_FALSE(contains(plain, " on "));
}
