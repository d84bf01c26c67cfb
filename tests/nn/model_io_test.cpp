// Model files: round trip, loading into fresh blocks, and rejection of every
// kind of bad file with the model left unchanged.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <ndgc/model.hpp>
#include <ndgc/ndgc.hpp>

namespace ndgc {
namespace {

std::filesystem::path temp_file(const char* name) {
  return std::filesystem::temp_directory_path() / (std::string("ndgc_") + name + "_" + std::to_string(::getpid()));
}

std::unique_ptr<nn::Block> net() { return std::make_unique<nn::Mlp>(6, 3, std::vector<std::int64_t>{5, 4}); }

std::vector<std::vector<float>> values(Model& m) {
  std::vector<std::vector<float>> out;
  for (const auto& p : m.parameters()) out.push_back(p.parameter->array().to_vector<float>());
  return out;
}

std::vector<unsigned char> read(const std::filesystem::path& f) {
  std::ifstream in(f, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const std::filesystem::path& f, const std::vector<unsigned char>& bytes) {
  std::ofstream out(f, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

}  // namespace

TEST_CASE("save, load, predict: identical outputs") {
  const auto file = temp_file("roundtrip");
  set_random_seed(3);
  Model a("a", net());
  a.initialize(Shape{2, 6});
  a.save(file);
  CHECK_FALSE(std::filesystem::exists(file.string() + ".tmp"));

  Model b("b", net());  // uninitialized: load creates the parameters
  b.load(file);
  CHECK(b.block().is_initialized());
  CHECK(values(b) == values(a));
  for (const auto& p : b.parameters()) {
    CHECK(p.parameter->array().manager().same(b.manager()));
    CHECK(p.parameter->array().requires_gradient());
  }

  Model c("c", net());
  set_random_seed(99);
  c.initialize(Shape{2, 6});
  NDArray handle = c.parameters()[0].parameter->array();
  c.load(file);  // in place: same arrays, new values
  CHECK(c.parameters()[0].parameter->array().same(handle));
  CHECK(values(c) == values(a));

  NDManager in = NDManager::new_base_manager("in");
  NDArray x = in.random_normal({4, 6});
  auto predict = [&](Model& m) { return m.block().forward(NDList{x}).head().to_vector<float>(); };
  CHECK(predict(a) == predict(b));
  CHECK(predict(a) == predict(c));
  std::filesystem::remove(file);
}

TEST_CASE("float64 and every layout round-trip exactly") {
  const auto file = temp_file("f64");
  Model a("a", net());
  a.initialize(Shape{1, 6}, DataType::float64);
  a.save(file);
  Model b("b", net());
  b.load(file);
  for (std::size_t i = 0; i < a.parameters().size(); ++i) {
    CHECK(b.parameters()[i].parameter->array().dtype() == DataType::float64);
    CHECK(b.parameters()[i].parameter->array().to_vector<double>() ==
          a.parameters()[i].parameter->array().to_vector<double>());
  }
  std::filesystem::remove(file);
}

TEST_CASE("float16 and bfloat16 parameters round-trip bit for bit; Model::cast converts once and closes the old") {
  for (DataType t : {DataType::float16, DataType::bfloat16}) {
    CAPTURE(to_string(t));
    const auto file = temp_file("half");
    Model a("a", net());
    a.initialize(Shape{1, 6});
    const std::vector<float> before = a.parameters()[0].parameter->array().to_vector<float>();
    const std::size_t arrays = a.manager().array_count();
    a.cast(t);
    CHECK(a.manager().array_count() == arrays);  // each old array closed as its copy came
    const NDArray w = a.parameters()[0].parameter->array();
    CHECK(w.dtype() == t);
    const std::vector<float> after = w.to_vector<float>();
    for (std::size_t i = 0; i < before.size(); ++i) CHECK(after[i] == float(w.to_type(t).to_vector<float>()[i]));
    CHECK(after[0] == (t == DataType::float16 ? float(float16(before[0])) : float(bfloat16(before[0]))));
    a.save(file);
    Model b("b", net());
    b.load(file);
    for (std::size_t i = 0; i < a.parameters().size(); ++i) {
      CHECK(b.parameters()[i].parameter->array().dtype() == t);
      CHECK(b.parameters()[i].parameter->array().to_vector<float>() ==
            a.parameters()[i].parameter->array().to_vector<float>());
    }
    std::filesystem::remove(file);
  }
}

TEST_CASE("bad files raise DataError and leave the model unchanged") {
  const auto file = temp_file("good"), bad = temp_file("bad");
  Model a("a", net());
  a.initialize(Shape{1, 6});
  a.save(file);
  const std::vector<unsigned char> good = read(file);

  Model target("target", net());
  set_random_seed(12);
  target.initialize(Shape{1, 6});
  const auto before = values(target);
  const std::size_t arrays = target.manager().array_count();
  auto rejects = [&](const std::vector<unsigned char>& bytes, const char* message) {
    write(bad, bytes);
    CAPTURE(message);
    CHECK_THROWS_WITH_AS(target.load(bad), doctest::Contains(message), DataError);
    CHECK(values(target) == before);
    CHECK(target.manager().array_count() == arrays);
  };

  CHECK_THROWS_WITH_AS(target.load(temp_file("missing")), doctest::Contains("cannot open"), DataError);
  rejects({}, "truncated while reading the magic number");
  rejects(std::vector<unsigned char>(good.begin(), good.begin() + 10), "truncated");
  for (std::size_t cut : {good.size() / 2, good.size() - 1, std::size_t(30)})
    rejects(std::vector<unsigned char>(good.begin(), good.begin() + std::ptrdiff_t(cut)), "truncated or corrupt");
  std::vector<unsigned char> flipped = good;
  flipped[good.size() / 2] ^= 0x10;
  rejects(flipped, "CRC-32");
  std::vector<unsigned char> magic = good;
  magic[0] = 'X';
  rejects(magic, "bad magic number");
  std::vector<unsigned char> version = good;
  version[8] = 7;
  rejects(version, "format version 7 is not supported");
  std::vector<unsigned char> longer = good;
  longer.insert(longer.end() - 4, {0, 0, 0});
  rejects(longer, "CRC-32");

  // A valid file of another model.
  const auto other = temp_file("other");
  Model wide("wide", std::make_unique<nn::Mlp>(6, 3, std::vector<std::int64_t>{7, 4}));
  wide.initialize(Shape{1, 6});
  wide.save(other);
  rejects(read(other), "parameter '1.weight' is float32 (6, 7) in the file but float32 (6, 5) in the model");
  Model deep("deep", std::make_unique<nn::Mlp>(6, 3, std::vector<std::int64_t>{5, 4, 3}));
  deep.initialize(Shape{1, 6});
  deep.save(other);
  rejects(read(other), "is not in model");
  auto partial = std::make_unique<nn::SequentialBlock>();
  partial->add(nn::batch_flatten_block()).add(std::make_unique<nn::Linear>(5)).add(nn::relu_block());
  partial->add(std::make_unique<nn::Linear>(4));
  Model shallow("shallow", std::move(partial));
  shallow.initialize(Shape{1, 6});
  shallow.save(other);
  rejects(read(other), "no parameter '5.weight'");

  // An uninitialized model stays uninitialized.
  Model fresh("fresh", net());
  write(bad, flipped);
  CHECK_THROWS_AS(fresh.load(bad), DataError);
  CHECK_FALSE(fresh.block().is_initialized());
  CHECK(fresh.manager().array_count() == 0);
  for (const auto& f : {file, bad, other}) std::filesystem::remove(f);
}

TEST_CASE("save into a missing directory raises DataError") {
  Model a("a", net());
  a.initialize(Shape{1, 6});
  CHECK_THROWS_WITH_AS(a.save("/nonexistent-dir/x.ndgc"), doctest::Contains("cannot create"), DataError);
}

}  // namespace ndgc
