// return_free_heap_to_os gives back free pages inside the heap, which free() alone keeps.
#include "base/heap_trim.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace qvl {
namespace {

// Resident anonymous memory of this process, KiB (smaps_rollup walks the page tables; the
// counters of /proc/self/status may lag).
long resident_anon_kib() {
  std::ifstream status("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Anonymous:", 0) == 0) return std::strtol(line.c_str() + 10, nullptr, 10);
  }
  return -1;
}

TEST(HeapTrim, FreedMemoryInsideTheHeapLeavesResidentMemory) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "malloc_trim is glibc's";
#else
  ASSERT_GT(resident_anon_kib(), 0);
  // As after the allocator has raised its mmap threshold: 1 MiB blocks come from the heap.
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1) {
    GTEST_SKIP() << "the allocator is not glibc's (a sanitizer's): nothing to trim";
  }
  constexpr int kBlocks = 128;
  std::vector<char*> blocks;
  for (int i = 0; i < kBlocks; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(1 << 20)));
    std::memset(blocks.back(), i + 1, 1 << 20);  // resident
  }
  char* keep = static_cast<char*>(std::malloc(4096));  // above the blocks: the heap cannot shrink
  keep[0] = 1;
  for (char* b : blocks) std::free(b);
  const long freed = resident_anon_kib();
  return_free_heap_to_os();
  const long trimmed = resident_anon_kib();
  std::free(keep);
  mallopt(M_MMAP_THRESHOLD, 128 << 10);
  // ~128 MiB go back (a few pages may stay for the allocator's own bookkeeping).
  EXPECT_LT(trimmed, freed - 100 * 1024) << "before " << freed << " KiB, after " << trimmed;
#endif
}

}  // namespace
}  // namespace qvl
