#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "base/error.h"
#include "base/half.h"
#include "model/safetensors_writer.h"

namespace qvl {
namespace {

std::string temp_dir() {
  const std::string dir = ::testing::TempDir() + "/qvl_st_" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::string cmd = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir;
}

TensorSpec bf16_ramp(const std::string& name, std::vector<int64_t> shape, float scale) {
  return {name, DType::kBF16, std::move(shape), [scale](int64_t off, int64_t n, uint8_t* out) {
            auto* p = reinterpret_cast<uint16_t*>(out);
            for (int64_t i = 0; i < n; ++i) p[i] = f32_to_bf16(scale * static_cast<float>(off + i));
          }};
}

// Raw file with a hand-written header, for corruption cases.
void write_raw(const std::string& path, const std::string& header, size_t data_bytes) {
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << std::string(data_bytes, '\0');
}

std::string error_of(const std::string& path) {
  try {
    SafeTensorsFile f(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SafeTensors, WritesAndReadsBack) {
  const std::string dir = temp_dir();
  write_safetensors(dir + "/model.safetensors",
                    {bf16_ramp("a", {2, 3}, 1.0f), bf16_ramp("b", {4}, 0.5f)});
  WeightStore store = WeightStore::open_folder(dir);
  EXPECT_TRUE(store.has("a"));
  EXPECT_EQ(store.get("a").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(store.get("a").to_f32(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(store.get("b").to_f32(), (std::vector<float>{0, 0.5f, 1, 1.5f}));
  try {
    store.get("missing.weight");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("missing.weight"), std::string::npos);
  }
}

TEST(SafeTensors, ShardedFolderWithIndex) {
  const std::string dir = temp_dir();
  write_safetensors(dir + "/model-00001-of-00002.safetensors", {bf16_ramp("x.weight", {3}, 1)});
  write_safetensors(dir + "/model-00002-of-00002.safetensors", {bf16_ramp("y.weight", {2}, 2)});
  std::ofstream(dir + "/model.safetensors.index.json")
      << R"({"metadata":{},"weight_map":{"x.weight":"model-00001-of-00002.safetensors",)"
      << R"("y.weight":"model-00002-of-00002.safetensors"}})";
  WeightStore store = WeightStore::open_folder(dir);
  EXPECT_EQ(store.get("y.weight").to_f32(), (std::vector<float>{0, 2}));
  EXPECT_EQ(store.names().size(), 2u);
  // An index that points a tensor at the wrong shard is corrupt.
  std::ofstream(dir + "/model.safetensors.index.json")
      << R"({"weight_map":{"x.weight":"model-00002-of-00002.safetensors",)"
      << R"("y.weight":"model-00002-of-00002.safetensors"}})";
  EXPECT_THROW(WeightStore::open_folder(dir), Error);
  // Path traversal in shard names is refused.
  std::ofstream(dir + "/model.safetensors.index.json")
      << R"({"weight_map":{"x.weight":"../evil.safetensors"}})";
  EXPECT_THROW(WeightStore::open_folder(dir), Error);
}

TEST(SafeTensors, TruncatedFileNamesFileAndTensor) {
  const std::string dir = temp_dir();
  write_safetensors(dir + "/m.safetensors", {bf16_ramp("big.weight", {1000}, 1)});
  std::ifstream in(dir + "/m.safetensors", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  for (size_t keep : {size_t{0}, size_t{5}, size_t{8}, size_t{20}, all.size() - 1}) {
    std::ofstream(dir + "/t.safetensors", std::ios::binary) << all.substr(0, keep);
    const std::string msg = error_of(dir + "/t.safetensors");
    EXPECT_NE(msg.find("t.safetensors"), std::string::npos) << keep << ": " << msg;
  }
  std::ofstream(dir + "/t.safetensors", std::ios::binary) << all.substr(0, all.size() - 1);
  EXPECT_NE(error_of(dir + "/t.safetensors").find("big.weight"), std::string::npos);
}

TEST(SafeTensors, RejectsCorruptHeaders) {
  const std::string dir = temp_dir();
  const std::string p = dir + "/c.safetensors";
  const std::vector<std::pair<std::string, size_t>> cases = {
      {"not json", 0},
      {"[1,2]", 0},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8},   // bytes != shape
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4},   // beyond file
      {R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8},  // negative dim
      {R"({"a":{"dtype":"Q9","shape":[2],"data_offsets":[0,8]}})", 8},    // unknown dtype
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8},   // reversed
      {R"({"a":{"dtype":"F32","shape":[2]}})", 8},                        // no offsets
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12},  // overlap
      {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8},
  };
  for (const auto& [header, bytes] : cases) {
    write_raw(p, header, bytes);
    EXPECT_FALSE(error_of(p).empty()) << header;
  }
  // Header length larger than the file.
  std::ofstream out(p, std::ios::binary);
  const uint64_t huge = 1ull << 40;
  out.write(reinterpret_cast<const char*>(&huge), 8);
  out.close();
  EXPECT_NE(error_of(p).find("truncated"), std::string::npos);
}

// An empty F32 tensor converts to an empty vector (its copy used to pass memcpy a null
// destination, which UBSan reports), and a non-empty one keeps its values.
TEST(SafeTensors, EmptyF32TensorConvertsToEmpty) {
  const std::string dir = temp_dir();
  const std::string p = dir + "/model.safetensors";
  const float values[2] = {1.5f, -2.0f};
  {
    std::ofstream out(p, std::ios::binary);
    const std::string header = R"({"empty":{"dtype":"F32","shape":[0,4],"data_offsets":[0,0]},)"
                               R"("pair":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    const uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header;
    out.write(reinterpret_cast<const char*>(values), sizeof(values));
  }
  SafeTensorsFile file(p);
  EXPECT_TRUE(file.get("empty").to_f32().empty());
  EXPECT_EQ(file.get("pair").to_f32(), (std::vector<float>{1.5f, -2.0f}));
  TensorView detached;  // no data at all
  detached.name = "detached";
  detached.shape = {0};
  EXPECT_TRUE(detached.to_f32().empty());
}

}  // namespace
}  // namespace qvl
