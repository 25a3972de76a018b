#include "engine/scoring.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "engine/prompt_embeddings.h"
#include "model/rope_index.h"

namespace qvl {
namespace {

// Logits are computed this many rows at a time: 8 x 151936 floats is under 5 MB, however long
// the continuation is, and still lets the lm_head kernel share weight reads across rows.
constexpr int64_t kLogitRowsPerChunk = 8;

void check_continuation(const std::vector<int64_t>& continuation, int64_t prompt_length,
                        int64_t vocab, int64_t context_length) {
  for (size_t i = 0; i < continuation.size(); ++i) {
    if (continuation[i] < 0 || continuation[i] >= vocab) {
      fail(ErrorCode::kInvalidArgument,
           "continuation token " + std::to_string(i) + " is " + std::to_string(continuation[i]) +
               ", outside the vocabulary (size " + std::to_string(vocab) + ")");
    }
  }
  const int64_t total = prompt_length + static_cast<int64_t>(continuation.size());
  if (total > context_length) {
    fail(ErrorCode::kInvalidArgument,
         "the prompt (" + std::to_string(prompt_length) + " tokens) and the continuation (" +
             std::to_string(continuation.size()) + ") need " + std::to_string(total) +
             " positions but the context holds " + std::to_string(context_length));
  }
}

// [3, n + m]: the prompt's M-RoPE positions, then n + i + delta on every axis for continuation
// token i, exactly as cached decoding numbers generated tokens.
std::vector<int64_t> positions_with_continuation(const RopePositions& prompt, int64_t m) {
  const int64_t n = prompt.n, total = n + m;
  std::vector<int64_t> pos(static_cast<size_t>(3 * total));
  for (int64_t axis = 0; axis < 3; ++axis) {
    std::copy_n(prompt.pos.begin() + axis * n, n, pos.begin() + axis * total);
    for (int64_t i = 0; i < m; ++i) pos[axis * total + n + i] = n + i + prompt.delta;
  }
  return pos;
}

}  // namespace

double log_sum_exp(const float* logits, int64_t n) {
  double top = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) top = std::max(top, static_cast<double>(logits[i]));
  if (!std::isfinite(top)) return top;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - top);
  return top + std::log(sum);
}

ScoreResult score_continuation(TextDecoder& decoder, const ModelConfig& config,
                               const std::vector<int64_t>& prompt_ids,
                               const std::vector<SharedImageFeatures>& images,
                               const std::vector<int64_t>& continuation, int64_t context_length,
                               const LogitsCallback& on_logits) {
  const int64_t n = static_cast<int64_t>(prompt_ids.size());
  const int64_t m = static_cast<int64_t>(continuation.size());
  const int64_t hidden = config.text.hidden_size;
  const int64_t vocab = config.text.vocab_size;
  QVL_CHECK(n > 0);
  check_continuation(continuation, n, vocab, context_length);

  ScoreResult result;
  result.prompt_ids = prompt_ids;
  std::vector<ImageGrid> grids;
  for (const auto& f : images) {
    grids.push_back(f->grid);
    result.image_tokens += f->vision.tokens;
  }
  const RopePositions prompt_pos = compute_rope_positions(prompt_ids, grids, config.image_token_id,
                                                          config.vision.spatial_merge_size);
  const std::vector<int64_t> pos = positions_with_continuation(prompt_pos, m);

  std::vector<float> x(static_cast<size_t>((n + m) * hidden));
  RangeFeatureAdds adds;
  PromptEmbeddings(decoder, config, prompt_ids, images).make_rows(0, n, x.data(), adds);
  decoder.embed(continuation.data(), m, x.data() + n * hidden);

  KVCache cache = decoder.new_cache();
  std::vector<float> final_norm(static_cast<size_t>((n + m) * hidden));
  decoder.forward(x.data(), n + m, pos.data(), cache, adds.or_null(), final_norm.data());

  // Row r of the scored block is sequence position n - 1 + r: it predicts continuation[r].
  std::vector<float> logits(static_cast<size_t>(kLogitRowsPerChunk * vocab));
  for (int64_t first = 0; first <= m; first += kLogitRowsPerChunk) {
    const int64_t rows = std::min(kLogitRowsPerChunk, m + 1 - first);
    decoder.logits(&final_norm[(n - 1 + first) * hidden], rows, logits.data());
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = &logits[r * vocab];
      const int64_t index = first + r;
      if (index < m) {
        result.token_logprobs.push_back(row[continuation[index]] - log_sum_exp(row, vocab));
      }
      if (on_logits) on_logits(index, row);
    }
  }
  return result;
}

}  // namespace qvl
