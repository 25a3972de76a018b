#include "media/worker_frames.h"

#include <string>

#include "base/error.h"

namespace qvl::media::frames {

void put_u32(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

void put_u64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

uint32_t get_u32(const char* p) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= uint32_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return value;
}

uint64_t get_u64(const char* p) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return value;
}

std::string header(uint8_t tag, uint32_t length) {
  std::string out(1, static_cast<char>(tag));
  put_u32(out, length);
  return out;
}

// Drops the consumed bytes while waiting for the rest of a frame, so the buffer holds at most one
// frame and a header.
std::optional<WorkerFrame> FrameReader::compact() {
  buffer_.erase(0, offset_);
  offset_ = 0;
  return std::nullopt;
}

std::optional<WorkerFrame> FrameReader::next() {
  const size_t available = buffer_.size() - offset_;
  if (available < kHeaderSize) return compact();
  const char* p = buffer_.data() + offset_;
  const uint32_t length = get_u32(p + 1);
  if (length > budget_) {
    fail(ErrorCode::kResourceExhausted,
         "produced more than its output limit of " + std::to_string(limit_) + " bytes");
  }
  if (available < kHeaderSize + length) return compact();
  WorkerFrame frame{static_cast<uint8_t>(p[0]), std::string(p + kHeaderSize, length)};
  budget_ -= length;
  offset_ += kHeaderSize + length;
  return frame;
}

}  // namespace qvl::media::frames
