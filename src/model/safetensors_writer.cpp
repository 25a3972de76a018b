#include "model/safetensors_writer.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qvl {
namespace {

uint64_t byte_size(const TensorSpec& t) {
  uint64_t numel = 1;
  for (int64_t d : t.shape) numel *= static_cast<uint64_t>(d);
  return numel * dtype_size(t.dtype);
}

uint64_t round_up(uint64_t n, uint64_t alignment) {
  return alignment == 0 ? n : (n + alignment - 1) / alignment * alignment;
}

// One entry of the data section: a tensor of the caller's, or padding (spec == nullptr).
struct Entry {
  std::string name;
  const TensorSpec* spec = nullptr;
  uint64_t begin = 0, end = 0;
};

std::vector<Entry> lay_out(const std::vector<TensorSpec>& tensors, size_t alignment) {
  std::vector<Entry> entries;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const uint64_t begin = round_up(offset, alignment);
    if (begin != offset) {
      entries.push_back({"__pad" + std::to_string(entries.size()), nullptr, offset, begin});
    }
    entries.push_back({t.name, &t, begin, begin + byte_size(t)});
    offset = entries.back().end;
  }
  return entries;
}

std::string header_text(const std::vector<Entry>& entries, const SafeTensorsWriteOptions& options) {
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  for (const auto& [key, value] : options.metadata) header["__metadata__"][key] = value;
  for (const auto& e : entries) {
    const bool pad = e.spec == nullptr;
    header[e.name] = {{"dtype", dtype_name(pad ? DType::kU8 : e.spec->dtype)},
                      {"shape", pad ? std::vector<int64_t>{static_cast<int64_t>(e.end - e.begin)}
                                    : e.spec->shape},
                      {"data_offsets", {e.begin, e.end}}};
  }
  std::string text = header.dump();
  const uint64_t alignment = options.alignment == 0 ? 8 : options.alignment;
  text.resize(round_up(8 + text.size(), alignment) - 8, ' ');  // the format allows trailing spaces
  return text;
}

void write_entries(FILE* f, const std::string& partial, const std::string& header,
                   const std::vector<Entry>& entries) {
  auto put = [&](const void* data, size_t n) {
    if (n != 0 && std::fwrite(data, 1, n, f) != n) {
      fail(ErrorCode::kIo, "write to '" + partial + "' failed (disk full?)");
    }
  };
  const uint64_t len = header.size();
  put(&len, 8);
  put(header.data(), header.size());
  constexpr int64_t kChunk = 1 << 20;
  std::vector<uint8_t> buf;
  for (const auto& e : entries) {
    if (e.spec == nullptr) {
      buf.assign(e.end - e.begin, 0);
      put(buf.data(), buf.size());
      continue;
    }
    const TensorSpec& t = *e.spec;
    if (t.produce) {
      uint64_t written = 0;
      t.produce([&](const void* data, size_t n) {
        put(data, n);
        written += n;
      });
      if (written != e.end - e.begin) {
        fail(ErrorCode::kInternal, "tensor '" + t.name + "' produced " + std::to_string(written) +
                                       " bytes, its shape needs " +
                                       std::to_string(e.end - e.begin));
      }
      continue;
    }
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
}

}  // namespace

TensorSpec byte_tensor(const std::string& name, std::string bytes) {
  const auto shared = std::make_shared<const std::string>(std::move(bytes));
  return {name,
          DType::kU8,
          {static_cast<int64_t>(shared->size())},
          [shared](int64_t off, int64_t n, uint8_t* out) {
            std::memcpy(out, shared->data() + off, static_cast<size_t>(n));
          }};
}

void write_safetensors(const std::string& path, const std::vector<TensorSpec>& tensors,
                       const SafeTensorsWriteOptions& options) {
  if (options.alignment & (options.alignment - 1)) {
    fail(ErrorCode::kInvalidArgument, "safetensors alignment must be a power of two");
  }
  const std::vector<Entry> entries = lay_out(tensors, options.alignment);
  const std::string header = header_text(entries, options);
  const std::string partial = path + ".partial";
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(partial.c_str(), "wb"), &std::fclose);
  if (!f) fail(ErrorCode::kIo, "cannot write '" + partial + "'");
  try {
    write_entries(f.get(), partial, header, entries);
    if (std::fflush(f.get()) != 0) fail(ErrorCode::kIo, "write to '" + partial + "' failed");
    if (std::fclose(f.release()) != 0) fail(ErrorCode::kIo, "write to '" + partial + "' failed");
    if (std::rename(partial.c_str(), path.c_str()) != 0) {
      fail(ErrorCode::kIo, "cannot rename '" + partial + "' to '" + path + "'");
    }
  } catch (...) {
    f.reset();
    std::remove(partial.c_str());
    throw;
  }
}

}  // namespace qvl
