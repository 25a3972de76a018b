#include "engine/prefill_chunk.h"

#include <algorithm>

#include "base/error.h"

namespace qvl {

int64_t prefill_chunk_end(int64_t begin, int64_t n, int64_t size) {
  QVL_CHECK(size >= kMinPrefillChunk && begin < n);
  const int64_t end = std::min(n, begin + size);
  return n - end < kMinPrefillChunk ? n : end;
}

void PrefillChunk::start(const PromptEmbeddings& prompt, const RopePositions& pos, int64_t b,
                         int64_t e, int64_t hidden_size) {
  begin = b;
  end = e;
  layers_done = 0;
  const int64_t rows = e - b, n = pos.n;
  hidden.resize(static_cast<size_t>(rows * hidden_size));
  prompt.make_rows(b, e, hidden.data(), features);
  positions.resize(static_cast<size_t>(3 * rows));
  for (int64_t st = 0; st < 3; ++st) {
    std::copy(pos.pos.begin() + st * n + b, pos.pos.begin() + st * n + e,
              positions.begin() + st * rows);
  }
}

}  // namespace qvl
