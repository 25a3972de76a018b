// Test helper: what /proc/self/smaps says about the mapping that holds an address.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace qvl::test_util {

// The VmFlags line of the mapping that holds `address`, or "" if smaps lists none (an emulator's
// /proc). Flag "hg" means the mapping carries MADV_HUGEPAGE.
inline std::string mapping_flags(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &begin, &end) == 2 &&
        line.find(':') > line.find(' ')) {
      inside = begin <= at && at < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line + " ";
    }
  }
  return "";
}

inline bool system_has_huge_pages() {
  return static_cast<bool>(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"));
}

}  // namespace qvl::test_util
