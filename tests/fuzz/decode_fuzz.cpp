// libFuzzer target: arbitrary bytes into decode_image with small limits. Any qvl::Error is a
// fine outcome; crashes, sanitizer reports, leaks, hangs and other exceptions are bugs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "base/error.h"
#include "image/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const qvl::DecodeLimits limits{.max_bytes = 1 << 20, .max_pixels = 1 << 20};
  try {
    const qvl::RgbImage image = qvl::decode_image(data, size, limits);
    // A decoded image must be well-formed; abort so the fuzzer records the input otherwise.
    if (image.width <= 0 || image.height <= 0 ||
        image.pixels.size() != size_t(image.width) * size_t(image.height) * 3 ||
        uint64_t(image.width) * uint64_t(image.height) > limits.max_pixels) {
      std::abort();
    }
  } catch (const qvl::Error&) {
  }
  return 0;
}
