// The media worker's wire format (media_worker.h). Parent to child: u32 job-params length, the
// params, u64 input length, the input. Child to parent: frames of [u8 tag][u32 length][payload],
// little-endian, ending with a done frame; a job's error is an error frame (u8 ErrorCode, message)
// instead. The parent parses incrementally and checks every length against what is left of its
// output budget before buffering it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "media/media_worker.h"

namespace qvl::media::frames {

constexpr uint8_t kErrorTag = 0xFE;
constexpr uint8_t kDoneTag = 0xFF;
constexpr size_t kHeaderSize = 5;

void put_u32(std::string& out, uint32_t value);
void put_u64(std::string& out, uint64_t value);
uint32_t get_u32(const char* p);
uint64_t get_u64(const char* p);

// The frame header for a payload of `length` bytes.
std::string header(uint8_t tag, uint32_t length);

// Parent side: bytes in, whole frames out.
class FrameReader {
 public:
  explicit FrameReader(uint64_t budget) : limit_(budget), budget_(budget) {}
  void append(const char* data, size_t size) { buffer_.append(data, size); }
  // The next whole frame, or nothing until more bytes arrive. Throws qvl::Error
  // (kResourceExhausted) when a frame would pass the output budget.
  std::optional<WorkerFrame> next();
  bool pending() const { return buffer_.size() > offset_; }

 private:
  std::optional<WorkerFrame> compact();

  std::string buffer_;
  size_t offset_ = 0;
  uint64_t limit_;   // the whole output budget, for the message
  uint64_t budget_;  // what is left of it
};

}  // namespace qvl::media::frames
