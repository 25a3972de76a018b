#include "engine/prefill_chunk.h"

#include <algorithm>
#include <cstring>

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
  std::memcpy(hidden.data(), prompt.x.data() + b * hidden_size, sizeof(float) * rows * hidden_size);
  positions.resize(static_cast<size_t>(3 * rows));
  for (int64_t st = 0; st < 3; ++st) {
    std::copy(pos.pos.begin() + st * n + b, pos.pos.begin() + st * n + e,
              positions.begin() + st * rows);
  }
  // DeepStack rows of this chunk: prompt.adds.rows is ascending, so they are one run.
  adds.rows.clear();
  adds.per_layer.clear();
  const std::vector<int64_t>& all = prompt.adds.rows;
  const auto first = std::lower_bound(all.begin(), all.end(), b);
  const auto last = std::lower_bound(all.begin(), all.end(), e);
  if (first == last) return;
  for (auto it = first; it != last; ++it) adds.rows.push_back(*it - b);
  const int64_t offset = (first - all.begin()) * hidden_size;
  for (const float* f : prompt.adds.per_layer) adds.per_layer.push_back(f + offset);
}

}  // namespace qvl
