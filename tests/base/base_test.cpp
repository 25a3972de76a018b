#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/error.h"
#include "base/half.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "proc_mappings.h"

namespace qvl {
namespace {

TEST(Half, Bf16RoundTripIsExactForBf16Values) {
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_bf16(f), h);
  }
}

TEST(Half, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(Half, F16Values) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
}

TEST(AlignedBuffer, AlignedAndKeepsContents) {
  AlignedBuffer<float> b(3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  b[0] = 1;
  b[2] = 3;
  b.resize(1000);
  EXPECT_EQ(b[0], 1);
  EXPECT_EQ(b[2], 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
}

TEST(AlignedBuffer, LargeBuffersAskForHugePages) {
  if (!test_util::system_has_huge_pages()) GTEST_SKIP() << "no transparent huge pages here";
  AlignedBuffer<float> large(AlignedBuffer<float>::kHugePagesFrom / sizeof(float));
  const std::string flags = test_util::mapping_flags(large.data() + large.size() / 2);
  if (flags.empty()) GTEST_SKIP() << "/proc/self/smaps does not list the heap (an emulator's)";
  EXPECT_NE(flags.find(" hg "), std::string::npos) << flags;
  // A range without an aligned 2 MiB in it is left alone.
  EXPECT_FALSE(advise_huge_pages(large.data(), 4096));
}

TEST(MappedFile, MapsAndReportsMissing) {
  const std::string path = testing::TempDir() + "/qvl_mapped.bin";
  {
    std::ofstream out(path, std::ios::binary);
    out << "hello";
  }
  MappedFile f(path);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data()), 5), "hello");
  try {
    MappedFile missing(path + ".nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("qvl_mapped.bin.nope"), std::string::npos);
  }
  std::remove(path.c_str());
}

// The process's resident file-backed pages (kB), from /proc/self/status.
int64_t rss_file_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssFile:", 0) == 0) return std::stoll(line.substr(8));
  }
  return -1;
}

TEST(MappedFile, PopulatePagesMapsTheRangeIn) {
  const std::string path =
      testing::TempDir() + "/qvl_populate_" + std::to_string(::getpid()) + ".bin";
  constexpr size_t kBytes = size_t{16} << 20;
  {
    std::ofstream out(path, std::ios::binary);
    const std::string chunk(1 << 20, 'x');
    for (size_t i = 0; i < kBytes / chunk.size(); ++i) out << chunk;
  }
  const MappedFile f(path);
  std::remove(path.c_str());  // the mapping keeps it
  ASSERT_EQ(f.size(), kBytes);
  const int64_t before = rss_file_kb();
  if (before < 0) GTEST_SKIP() << "no RssFile in /proc/self/status";
  // An unaligned start is rounded down to its page.
  if (!populate_pages(f.data() + 1, kBytes - 1)) {
    GTEST_SKIP() << "this kernel cannot populate pages (MADV_POPULATE_READ needs Linux 5.14)";
  }
  const int64_t after = rss_file_kb();
  // All 16 MiB are now resident in this process without being touched (counters may lag by a few
  // pages).
  EXPECT_GE(after - before, 15 * 1024) << before << " kB -> " << after << " kB";
  EXPECT_EQ(f.data()[kBytes - 1], 'x');
  EXPECT_TRUE(populate_pages(nullptr, 0));
}

// Pages of the file in the page cache (mincore on a mapping, which itself faults nothing in).
size_t cached_pages(const std::string& path, size_t bytes) {
  const MappedFile f(path);
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  if (::mincore(const_cast<uint8_t*>(f.data()), bytes, in.data()) != 0) return SIZE_MAX;
  size_t n = 0;
  for (unsigned char v : in) n += v & 1;
  return n;
}

TEST(MappedFile, DropCachedPagesEvictsAWrittenFile) {
  const std::string path = testing::TempDir() + "/qvl_drop_" + std::to_string(::getpid()) + ".bin";
  constexpr size_t kBytes = size_t{4} << 20;
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string(kBytes, 'y');
  }
  const size_t before = cached_pages(path, kBytes);
  ASSERT_NE(before, SIZE_MAX);
  if (before == 0) GTEST_SKIP() << "the written file is not in the page cache here";
  const bool dropped = drop_cached_pages(path);
  const size_t after = cached_pages(path, kBytes);
  std::remove(path.c_str());
  if (!dropped) GTEST_SKIP() << "this file system keeps its pages (tmpfs?)";
  // A few pages may come back (readahead by another process); most must be gone.
  EXPECT_LT(after, before / 4) << before << " -> " << after;
  EXPECT_FALSE(drop_cached_pages(path));  // gone: nothing to open
}

TEST(Log, ParsesLevels) {
  EXPECT_EQ(parse_log_level("warn"), LogLevel::kWarn);
  EXPECT_THROW(parse_log_level("loud"), Error);
}

}  // namespace
}  // namespace qvl
