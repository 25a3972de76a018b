// return_free_heap_to_os gives back free pages inside the heap, which free() alone keeps.
#include "base/heap_trim.h"

#include <gtest/gtest.h>

#include <cstdint>
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

TEST(HeapTrim, LargeBuffersLeaveResidentMemoryWhenFreed) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "mallopt is glibc's";
#else
  ASSERT_GT(resident_anon_kib(), 0);
  // As after the allocator has raised its thresholds on its own (a freed 24 MiB mapping).
  std::free(std::malloc(24 << 20));
  // Free space the heap already has (other tests' freed blocks) would serve the blocks below
  // before a new mapping: take it up first, as at the start of a process.
  std::vector<void*> soak;
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1) {
    // Until the free space stops shrinking (what is left are pieces smaller than a block).
    for (size_t last = SIZE_MAX; soak.size() < 4096;) {
      const size_t free_bytes = mallinfo2().fordblks;
      if (free_bytes < (1 << 20) || free_bytes >= last) break;
      last = free_bytes;
      soak.push_back(std::malloc(256 << 10));
    }
  }
  if (!return_large_buffers_when_freed()) {
    GTEST_SKIP() << "the allocator is not glibc's (a sanitizer's)";
  }
  constexpr int kBlocks = 64;
  std::vector<char*> blocks;
  for (int i = 0; i < kBlocks; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(2 << 20)));
    std::memset(blocks.back(), i + 1, 2 << 20);  // resident
  }
  char* keep = static_cast<char*>(std::malloc(4096));
  keep[0] = 1;
  const long held = resident_anon_kib();
  for (char* b : blocks) std::free(b);
  const long freed = resident_anon_kib();  // no trim call
  std::free(keep);
  for (void* p : soak) std::free(p);
  // ~128 MiB go back at free.
  EXPECT_LT(freed, held - 100 * 1024) << "held " << held << " KiB, after free " << freed;
#endif
}

}  // namespace
}  // namespace qvl
