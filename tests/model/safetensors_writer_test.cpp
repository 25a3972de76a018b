// The writer's options used by pre-packed files: metadata, 64-byte alignment without holes,
// tensors produced in one piece, and no partial file left behind on failure.
#include "model/safetensors_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "base/error.h"

namespace qvl {
namespace {

std::string temp_file(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/qvl_stw";
  std::filesystem::create_directories(dir);
  return dir + "/" + name;
}

TEST(SafeTensorsWriter, AlignsEveryTensorWithoutHoles) {
  const std::string path = temp_file("aligned.safetensors");
  std::vector<TensorSpec> specs;
  specs.push_back(byte_tensor("text", "hello"));
  specs.push_back({"odd", DType::kBF16, {3}, [](int64_t off, int64_t n, uint8_t* out) {
                     for (int64_t i = 0; i < n; ++i) out[2 * i] = out[2 * i + 1] = uint8_t(off + i);
                   }});
  TensorSpec whole{"whole", DType::kU8, {100}, {}};
  whole.produce = [](const ByteSink& sink) {
    std::vector<uint8_t> bytes(100);
    std::iota(bytes.begin(), bytes.end(), 0);
    sink(bytes.data(), 40);
    sink(bytes.data() + 40, 60);
  };
  specs.push_back(whole);
  specs.push_back(byte_tensor("empty", ""));
  SafeTensorsWriteOptions options;
  options.alignment = 64;
  options.metadata = {{"qvl.test", "yes"}};
  write_safetensors(path, specs, options);

  const SafeTensorsFile f(path);
  EXPECT_EQ(f.metadata().at("qvl.test"), "yes");
  EXPECT_EQ(f.metadata().at("format"), "pt");
  for (const char* name : {"text", "odd", "whole"}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(f.get(name).data) % 64, 0u) << name;
  }
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.get("text").data), 5), "hello");
  EXPECT_EQ(f.get("whole").data[99], 99);
  EXPECT_EQ(f.get("odd").to_f32().size(), 3u);
  EXPECT_EQ(f.get("empty").nbytes, 0u);
}

TEST(SafeTensorsWriter, DataSectionHasNoHoles) {
  const std::string path = temp_file("holes.safetensors");
  SafeTensorsWriteOptions options;
  options.alignment = 64;
  write_safetensors(path, {byte_tensor("a", "x"), byte_tensor("b", "yz"), byte_tensor("c", "w")},
                    options);
  const SafeTensorsFile f(path);
  // Padding tensors fill the gaps: the ranges tile the data section exactly.
  std::vector<std::pair<const uint8_t*, size_t>> ranges;
  for (const auto& [name, t] : f.tensors()) ranges.emplace_back(t.data, t.nbytes);
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    EXPECT_EQ(ranges[i - 1].first + ranges[i - 1].second, ranges[i].first) << i;
  }
  EXPECT_EQ(f.tensors().size(), 5u);  // a, pad, b, pad, c
}

TEST(SafeTensorsWriter, FailureLeavesNoFile) {
  const std::string path = temp_file("short.safetensors");
  TensorSpec t{"t", DType::kU8, {10}, {}};
  t.produce = [](const ByteSink& sink) { sink("abc", 3); };
  EXPECT_THROW(write_safetensors(path, {t}), Error);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

}  // namespace
}  // namespace qvl
