// libFuzzer target: any bytes as tokenizer.json (first byte even) or as the compact tokenizer
// stored in pre-packed files (odd). Loading must succeed or throw qvl::Error; a loaded tokenizer
// must encode and decode a short text without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const qvl::Tokenizer tokenizer = (data[0] & 1) == 0 ? qvl::Tokenizer::from_json_text(text)
                                                        : qvl::Tokenizer::from_compact(text);
    const auto ids = tokenizer.encode("Hi <|im_start|> 12 ab\n");
    (void)tokenizer.decode(ids);
  } catch (const qvl::Error&) {
  }
  return 0;
}
