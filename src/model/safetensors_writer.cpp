#include "model/safetensors_writer.h"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qvl {

void write_safetensors(const std::string& path, const std::vector<TensorSpec>& tensors) {
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    uint64_t numel = 1;
    for (int64_t d : t.shape) numel *= static_cast<uint64_t>(d);
    const uint64_t bytes = numel * dtype_size(t.dtype);
    header[t.name] = {{"dtype", dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');  // keep tensor data 8-byte aligned
  const std::string partial = path + ".partial";
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(partial.c_str(), "wb"), &std::fclose);
  if (!f) fail(ErrorCode::kIo, "cannot write '" + partial + "'");
  auto put = [&](const void* data, size_t n) {
    if (std::fwrite(data, 1, n, f.get()) != n) {
      fail(ErrorCode::kIo, "write to '" + partial + "' failed (disk full?)");
    }
  };
  const uint64_t len = text.size();
  put(&len, 8);
  put(text.data(), text.size());
  constexpr int64_t kChunk = 1 << 20;
  std::vector<uint8_t> buf;
  for (const auto& t : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    const size_t es = dtype_size(t.dtype);
    for (int64_t off = 0; off < numel; off += kChunk) {
      const int64_t count = std::min(kChunk, numel - off);
      buf.resize(static_cast<size_t>(count) * es);
      t.fill(off, count, buf.data());
      put(buf.data(), buf.size());
    }
  }
  if (std::fflush(f.get()) != 0) fail(ErrorCode::kIo, "write to '" + partial + "' failed");
  f.reset();
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    fail(ErrorCode::kIo, "cannot rename '" + partial + "' to '" + path + "'");
  }
}

}  // namespace qvl
