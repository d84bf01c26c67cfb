// Model files with their architecture (src/nn/model_archive.cpp): a file
// alone rebuilds the block, and bad headers are DataErrors naming the problem.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <ndgc/model_file.hpp>
#include <ndgc/ndgc.hpp>

namespace ndgc {
namespace {

std::filesystem::path temp_model(const char* name) {
  return std::filesystem::temp_directory_path() / (std::string("ndgc_arch_") + name + "_" + std::to_string(::getpid()));
}

std::string slurp(const std::filesystem::path& f) {
  std::ifstream in(f, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const std::filesystem::path& f, const std::string& s) {
  std::ofstream(f, std::ios::binary | std::ios::trunc) << s;
}

}  // namespace

TEST_CASE("a model file rebuilds the block from the file alone, with identical outputs") {
  const auto file = temp_model("roundtrip");
  const Architecture arch = Architecture::mlp(6, 3, {5, 4});
  Model model("m", arch.make_block());
  model.initialize(Shape{1, 6});
  save_model_file(model, arch, file);
  CHECK(slurp(file).starts_with("NDGCMODEL 1\narchitecture mlp\ninputs 6\noutputs 3\nhidden 5 4\ndtype float32\n\n"));

  const Architecture read = read_architecture(file);
  CHECK(read.inputs == 6);
  CHECK(read.outputs == 3);
  CHECK(read.hidden == std::vector<std::int64_t>{5, 4});

  LoadedModel loaded = load_model_file(file, "served");
  CHECK(loaded.model.name() == "served");
  NDManager m = NDManager::new_base_manager("inputs");
  NDArray x = m.create(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{1, 6});
  const auto a = model.block().forward(NDList{x}).head().to_vector<float>();
  const auto b = loaded.model.block().forward(NDList{x}).head().to_vector<float>();
  CHECK(a == b);
  std::filesystem::remove(file);
}

TEST_CASE("a cnn model file: the image block rebuilt, running statistics restored, the same predictions") {
  const auto file = temp_model("cnn");
  const Architecture arch = Architecture::cnn(16, 3, {2, 3, 5});  // 4x4 images
  set_random_seed(12);
  Model model("m", arch.make_block());
  model.initialize(Shape{2, 16});
  NDManager m = NDManager::new_base_manager("inputs");
  NDArray x = m.random_normal({4, 16});
  model.block().forward(NDList{x}, true);  // moves the running statistics off their start
  save_model_file(model, arch, file);
  const Architecture read = read_architecture(file);
  CHECK(read.name == "cnn");
  CHECK(read.hidden == std::vector<std::int64_t>{2, 3, 5});
  LoadedModel loaded = load_model_file(file, "served");
  const auto a = model.block().forward(NDList{x}, false).head().to_vector<float>();
  const auto b = loaded.model.block().forward(NDList{x}, false).head().to_vector<float>();
  CHECK(a == b);
  CHECK(loaded.model.block().output_shape(Shape{4, 16}) == Shape{4, 3});
  CHECK_THROWS_WITH_AS(Architecture::cnn(16, 3, {2, 3}).make_block(), doctest::Contains("hidden must be three sizes"),
                       InvalidArgument);
  std::filesystem::remove(file);
}

TEST_CASE("an lstm model file: rows as steps, the last step's output, the same predictions") {
  const auto file = temp_model("lstm");
  const Architecture arch = Architecture::lstm(16, 3, 5);  // 4 steps of 4 features, LSTM(5)
  set_random_seed(13);
  Model model("m", arch.make_block());
  CHECK(model.initialize(Shape{2, 16}) == Shape{2, 3});
  save_model_file(model, arch, file);
  const Architecture read = read_architecture(file);
  CHECK(read.name == "lstm");
  CHECK(read.hidden == std::vector<std::int64_t>{5});
  LoadedModel loaded = load_model_file(file, "served");
  NDManager m = NDManager::new_base_manager("inputs");
  NDArray x = m.random_normal({4, 16});
  const auto a = model.block().forward(NDList{x}, false).head().to_vector<float>();
  const auto b = loaded.model.block().forward(NDList{x}, false).head().to_vector<float>();
  CHECK(a.size() == 4 * 3);
  CHECK(a == b);
  std::vector<std::string> names;
  for (const auto& p : loaded.model.parameters()) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"1.l0.weight_ih", "1.l0.weight_hh", "1.l0.bias", "3.weight", "3.bias"});
  CHECK_THROWS_WITH_AS(Architecture::lstm(15, 3).make_block(), doctest::Contains("inputs = 15 is not the pixel count"),
                       InvalidArgument);
  Architecture two = Architecture::lstm(16, 3, 5);
  two.hidden.push_back(7);
  CHECK_THROWS_WITH_AS(two.make_block(), doctest::Contains("hidden must be one size (the LSTM's), not 2"),
                       InvalidArgument);
  auto block = Architecture::lstm(16, 3, 5).make_block();
  CHECK_THROWS_WITH_AS(block->output_shape(Shape{2, 4}), doctest::Contains("Steps[4, 4]"), InvalidArgument);
  // LastStep (child 2) takes the LSTM's [B, T, H] only.
  const nn::Block& last = *block->children().at(2).second;
  CHECK(last.output_shape(Shape{2, 4, 5}) == Shape{2, 5});
  CHECK_THROWS_WITH_AS(last.output_shape(Shape{2, 5}), doctest::Contains("LastStep: the input must be [B, T, H], not (2, 5)"),
                       InvalidArgument);
  std::filesystem::remove(file);
}

TEST_CASE("bad model files are DataErrors naming the problem") {
  const auto file = temp_model("bad");
  const Architecture arch = Architecture::mlp(6, 3, {5});
  Model model("m", arch.make_block());
  model.initialize(Shape{1, 6});
  save_model_file(model, arch, file);
  const std::string good = slurp(file);
  auto rejects = [&](const std::string& bytes, const char* problem) {
    spit(file, bytes);
    CHECK_THROWS_WITH_AS(load_model_file(file, "x"), doctest::Contains(problem), DataError);
  };
  rejects("NDGCPARM", "not a model file");
  std::string other = good;
  other.replace(other.find("mlp"), 3, "rnn");
  rejects(other, "unknown architecture 'rnn'");
  std::string not_square = good;
  not_square.replace(not_square.find("mlp"), 3, "cnn");
  rejects(not_square, "inputs = 6 is not the pixel count of a square image");
  std::string sizes = good;
  sizes.replace(sizes.find("inputs 6"), 8, "inputs 7");  // the parameters no longer fit
  rejects(sizes, "parameter");
  std::string negative = good;
  negative.replace(negative.find("inputs 6"), 8, "inputs -");
  rejects(negative, "'inputs' must be a positive size");
  rejects(good.substr(0, good.size() - 3), "truncated");
  CHECK_THROWS_AS(load_model_file(temp_model("missing"), "x"), DataError);
  std::filesystem::remove(file);
}

}  // namespace ndgc
