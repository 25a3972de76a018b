// For fuzz targets whose parser reads a path (it maps the file): the input bytes written to one
// file per process, rewritten for every input.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace qvl::fuzz {

inline std::string write_input_file(const char* name, const uint8_t* data, size_t size) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/qvl_fuzz_" +
                           std::to_string(getpid()) + "_" + name;
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || (size > 0 && std::fwrite(data, 1, size, file) != size)) std::abort();
  std::fclose(file);
  return path;
}

}  // namespace qvl::fuzz
