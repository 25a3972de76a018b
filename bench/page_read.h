// Shared by the decode attention benchmarks: a plain read of KV pages, the ceiling an attention
// call over the same pages is compared with, and the median of timings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qvl::bench {

// Reads the K and V pages of one layer (`bytes` each) with every pool thread, pages split between
// them, with the machine probe's read loop; returns a checksum so the reads stay.
uint64_t read_pages(const std::vector<const void*>& k_pages,
                    const std::vector<const void*>& v_pages, size_t bytes);

double median(std::vector<double> v);

}  // namespace qvl::bench
