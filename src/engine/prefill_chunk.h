// A prompt chunk in progress: which prompt rows it covers, their inputs, and how many decoder
// layers they went through. The scheduler may run a chunk's layers over several steps (while
// other sequences decode) or all at once; either way each row is computed with the same
// arithmetic (TextDecoder::forward_layers), and any chunk of kMinPrefillChunk rows or more gives
// the same bits as any other chunking (tests/model/chunked_prefill_test.cpp): below that, matmuls
// take the small-batch kernels, whose arithmetic differs from the GEMM's for bf16 weights (for
// q8/q4 it is the same, tests/ops/batch_invariance_test.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "base/aligned_buffer.h"
#include "engine/prompt_embeddings.h"
#include "model/rope_index.h"
#include "model/text_decoder.h"

namespace qvl {

inline constexpr int64_t kMinPrefillChunk = 16;

// End of the chunk that starts at `begin` of an n-row prompt, at most `size` rows long (size >=
// kMinPrefillChunk), never leaving fewer than kMinPrefillChunk rows for a last chunk.
int64_t prefill_chunk_end(int64_t begin, int64_t n, int64_t size);

struct PrefillChunk {
  int64_t begin = 0, end = 0;  // prompt rows [begin, end); empty: no chunk in progress
  int64_t layers_done = 0;
  AlignedBuffer<float> hidden;     // [rows, hidden]: embeddings, then the layers' outputs
  std::vector<int64_t> positions;  // [3, rows]
  RangeFeatureAdds features;       // DeepStack rows of the chunk (indexes into the chunk)

  bool active() const { return end > begin; }
  int64_t rows() const { return end - begin; }
  // Makes rows [begin, end) of the prompt's embeddings, positions and DeepStack features.
  void start(const PromptEmbeddings& prompt, const RopePositions& pos, int64_t begin, int64_t end,
             int64_t hidden_size);
  void clear() { begin = end = layers_done = 0; }
};

}  // namespace qvl
