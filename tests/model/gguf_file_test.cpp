#include "model/gguf_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>

#include "base/error.h"
#include "gguf_test_writer.h"

namespace qvl {
namespace {

using testing::f32_bytes;
using testing::GgufBuilder;

// A small valid file: every scalar type, arrays, and three tensors of different types.
GgufBuilder sample() {
  GgufBuilder b;
  b.string("general.architecture", "qwen3vl");
  b.u8("k.u8", 200);
  b.i8("k.i8", -5);
  b.u16("k.u16", 60000);
  b.i16("k.i16", -30000);
  b.u32("k.u32", 4000000000u);
  b.i32("k.i32", -7);
  b.u64("k.u64", 1ull << 40);
  b.i64("k.i64", -(1ll << 40));
  b.f32("k.f32", 1.5f);
  b.f64("k.f64", 0.25);
  b.boolean("k.bool", true);
  b.strings("k.strs", {"a", "", "ccc"});
  b.i32s("k.ints", {24, 20, 20, 0});
  b.f32s("k.floats", {0.5f, -1.0f});
  b.bools("k.bools", {true, false, true});
  b.tensor("a.weight", GgmlType::kF32, {3, 2}, f32_bytes({0, 1, 2, 3, 4, 5}));
  b.tensor("b.weight", GgmlType::kQ8_0, {32}, std::vector<uint8_t>(34, 1));
  b.tensor("c.weight", GgmlType::kF16, {4}, std::vector<uint8_t>(8, 0));
  return b;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    GgufFile::parse(bytes.data(), bytes.size(), "test.gguf");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GgufFile, ReadsEveryValueTypeAndTensor) {
  const std::vector<uint8_t> bytes = sample().bytes();
  const GgufFile f = GgufFile::parse(bytes.data(), bytes.size(), "x.gguf");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.get_string("general.architecture"), "qwen3vl");
  EXPECT_EQ(f.get_int("k.u8"), 200);
  EXPECT_EQ(f.get_int("k.i8"), -5);
  EXPECT_EQ(f.get_int("k.u16"), 60000);
  EXPECT_EQ(f.get_int("k.i16"), -30000);
  EXPECT_EQ(f.get_int("k.u32"), 4000000000ll);
  EXPECT_EQ(f.get_int("k.i32"), -7);
  EXPECT_EQ(f.get_int("k.u64"), 1ll << 40);
  EXPECT_EQ(f.get_int("k.i64"), -(1ll << 40));
  EXPECT_EQ(f.get_float("k.f32"), 1.5);
  EXPECT_EQ(f.get_float("k.f64"), 0.25);
  EXPECT_EQ(f.get_float("k.i32"), -7.0);
  EXPECT_TRUE(f.get_bool("k.bool"));
  EXPECT_EQ(f.get_strings("k.strs"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(f.get_ints("k.ints"), (std::vector<int64_t>{24, 20, 20, 0}));
  EXPECT_EQ(f.find("k.floats")->floats, (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(f.get_ints("k.bools"), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_FALSE(f.int_or_none("missing").has_value());
  ASSERT_EQ(f.tensors().size(), 3u);
  const GgufTensor& a = f.tensor("a.weight");
  EXPECT_EQ(a.type, GgmlType::kF32);
  EXPECT_EQ(a.dims, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(a.torch_shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.nbytes, 24u);
  float v[6];
  std::memcpy(v, a.data, sizeof v);
  EXPECT_EQ(v[5], 5.0f);
  EXPECT_EQ(f.tensor("b.weight").nbytes, 34u);
  EXPECT_EQ(f.tensor("b.weight").data[0], 1);
  EXPECT_EQ(f.tensor("b.weight").data,
            bytes.data() + f.data_offset() + f.tensor("b.weight").offset);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(f.tensor("b.weight").offset % 32, 0u);
}

TEST(GgufFile, TypedAccessNamesKeyAndType) {
  const std::vector<uint8_t> bytes = sample().bytes();
  const GgufFile f = GgufFile::parse(bytes.data(), bytes.size(), "x.gguf");
  try {
    f.get_int("general.architecture");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "corrupt GGUF file 'x.gguf': key 'general.architecture' is a string, expected an "
              "integer");
  }
  EXPECT_THROW(f.get_string("nope"), Error);
  EXPECT_THROW(f.get_ints("k.strs"), Error);
  EXPECT_THROW(f.tensor("nope"), Error);
}

TEST(GgufFile, HonoursAlignmentKey) {
  const std::vector<uint8_t> bytes = sample().bytes(64);
  const GgufFile f = GgufFile::parse(bytes.data(), bytes.size(), "x.gguf");
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  for (const GgufTensor& t : f.tensors()) EXPECT_EQ(t.offset % 64, 0u) << t.name;
}

TEST(GgufFile, OpensFromDiskAndRecognisesMagic) {
  const std::string path = ::testing::TempDir() + "/qvl_gguf_open.gguf";
  sample().write(path);
  EXPECT_TRUE(is_gguf_file(path));
  EXPECT_FALSE(is_gguf_file(::testing::TempDir()));
  EXPECT_FALSE(is_gguf_file(path + ".missing"));
  const GgufFile f = GgufFile::open(path);
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.tensor("a.weight").numel(), 6);
  std::remove(path.c_str());
}

TEST(GgufFile, EveryTruncationFailsWithOneLine) {
  const std::vector<uint8_t> bytes = sample().bytes();
  const GgufFile whole = GgufFile::parse(bytes.data(), bytes.size(), "x.gguf");
  const GgufTensor& last = whole.tensor("c.weight");
  const size_t end = whole.data_offset() + last.offset + last.nbytes;  // only padding follows
  for (size_t n = 0; n < end; ++n) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    const std::string e = error_of(cut);
    ASSERT_FALSE(e.empty()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_NE(e.find("test.gguf"), std::string::npos) << e;
  }
}

// Patches a u64/u32 at the position of a marker found in the bytes.
size_t find_bytes(const std::vector<uint8_t>& b, const std::string& s) {
  const auto it = std::search(b.begin(), b.end(), s.begin(), s.end());
  EXPECT_NE(it, b.end()) << s;
  return static_cast<size_t>(it - b.begin());
}
template <typename T>
void patch(std::vector<uint8_t>& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

TEST(GgufFile, RefusesHostileCountsAndSizes) {
  const std::vector<uint8_t> good = sample().bytes();
  auto b = good;
  patch<uint32_t>(b, 0, 0x12345678);
  EXPECT_NE(error_of(b).find("not a GGUF file"), std::string::npos);
  b = good;
  patch<uint32_t>(b, 4, 1);
  EXPECT_NE(error_of(b).find("version 1"), std::string::npos);
  b = good;
  patch<uint64_t>(b, 8, ~0ull);  // tensor count
  EXPECT_NE(error_of(b).find("tensor count"), std::string::npos);
  b = good;
  patch<uint64_t>(b, 16, 1ull << 40);  // key count
  EXPECT_NE(error_of(b).find("key/value count"), std::string::npos);
  b = good;
  patch<uint64_t>(b, 24, 1ull << 62);  // first key's length
  EXPECT_NE(error_of(b).find("bytes long"), std::string::npos);
  // An array claiming more elements than the file could hold.
  b = good;
  const size_t ints = find_bytes(b, "k.ints") + 6 + 4 + 4;  // after key, type, element type
  patch<uint64_t>(b, ints, 1ull << 61);
  EXPECT_NE(error_of(b).find("claims"), std::string::npos) << error_of(b);
  // A string element with a huge length.
  b = good;
  const size_t strs = find_bytes(b, "k.strs") + 6 + 4 + 4 + 8;
  patch<uint64_t>(b, strs, ~0ull);
  EXPECT_NE(error_of(b).find("truncated"), std::string::npos) << error_of(b);
  // Unknown value type, nested array.
  b = good;
  patch<uint32_t>(b, find_bytes(b, "k.u8") + 4, 99);
  EXPECT_NE(error_of(b).find("unknown value type 99"), std::string::npos);
  b = good;
  patch<uint32_t>(b, ints - 4, static_cast<uint32_t>(GgufValueType::kArray));
  EXPECT_NE(error_of(b).find("nests an array"), std::string::npos) << error_of(b);
  // Bool byte other than 0/1.
  b = good;
  patch<uint8_t>(b, find_bytes(b, "k.bool") + 6 + 4, 7);
  EXPECT_NE(error_of(b).find("bool byte 7"), std::string::npos);
}

TEST(GgufFile, RefusesBadTensorInfos) {
  const std::vector<uint8_t> good = sample().bytes();
  const size_t a = find_bytes(good, "a.weight") + 8;  // n_dims
  auto b = good;
  patch<uint32_t>(b, a, 9);
  EXPECT_NE(error_of(b).find("9 dimensions"), std::string::npos);
  b = good;
  patch<uint64_t>(b, a + 4, 1ull << 62);  // dims[0]
  EXPECT_NE(error_of(b).find("impossible dimension"), std::string::npos);
  b = good;
  patch<uint64_t>(b, a + 4 + 8, 0);  // dims[1]
  EXPECT_NE(error_of(b).find("impossible dimension 0"), std::string::npos);
  b = good;
  patch<uint32_t>(b, a + 4 + 16, 77);  // type
  EXPECT_NE(error_of(b).find("ggml type 77"), std::string::npos);
  b = good;
  patch<uint64_t>(b, a + 4 + 16 + 4, 8);  // offset not aligned
  EXPECT_NE(error_of(b).find("not a multiple of the alignment 32"), std::string::npos);
  b = good;
  patch<uint64_t>(b, a + 4 + 16 + 4, 1ull << 40);  // far beyond the file
  EXPECT_NE(error_of(b).find("lies outside the data section"), std::string::npos);
  b = good;
  patch<uint64_t>(b, a + 4 + 16 + 4, 32);  // onto b.weight
  EXPECT_NE(error_of(b).find("overlap"), std::string::npos) << error_of(b);
  // A Q8_0 row that is not a whole number of blocks.
  b = good;
  patch<uint64_t>(b, find_bytes(b, "b.weight") + 8 + 4, 31);
  EXPECT_NE(error_of(b).find("not whole Q8_0 blocks of 32"), std::string::npos) << error_of(b);
  // Duplicate tensor name and key.
  b = good;
  const size_t c = find_bytes(b, "c.weight");
  b[c] = 'a';
  EXPECT_NE(error_of(b).find("appears twice"), std::string::npos);
  b = good;
  b[find_bytes(b, "k.i8") + 2] = 'u';
  EXPECT_NE(error_of(b).find("'k.u8' appears twice"), std::string::npos);
  // Alignment that is not a power of two.
  GgufBuilder odd = sample();
  odd.u32("general.alignment", 48);
  EXPECT_NE(error_of(odd.bytes()).find("not a power of two"), std::string::npos);
}

// Random damage (bytes overwritten, cut, duplicated) must parse or fail with qvl::Error; never
// crash, hang or allocate without bound. Under the sanitizer builds this is a small fuzzer.
TEST(GgufFile, SurvivesRandomDamage) {
  const std::vector<uint8_t> good = sample().bytes();
  std::mt19937 rng(1234);
  int parsed = 0, refused = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::vector<uint8_t> b = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % b.size();
      switch (rng() % 4) {
        case 0:
          b[at] = static_cast<uint8_t>(rng());
          break;
        case 1:
          b[at] = 0xff;
          break;
        case 2:
          b.resize(at);
          break;
        default:
          b.insert(b.begin() + static_cast<ptrdiff_t>(at), b[at]);
      }
      if (b.empty()) break;
    }
    try {
      const GgufFile f = GgufFile::parse(b.data(), b.size(), "fuzz.gguf");
      for (const GgufTensor& t : f.tensors()) {
        ASSERT_GE(t.data, b.data());
        ASSERT_LE(t.data + t.nbytes, b.data() + b.size());
      }
      ++parsed;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      ++refused;
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(parsed, 10);
}

}  // namespace
}  // namespace qvl
