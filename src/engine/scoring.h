// Teacher-forced scoring (the model work behind Engine::score): prompt + continuation in one
// forward pass, next-token logits for the continuation's positions.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/image_features.h"
#include "model/config.h"
#include "model/text_decoder.h"
#include "qvl/engine.h"

namespace qvl {

// log(sum_i exp(logits[i])), accumulated in double and shifted by the maximum: the denominator of
// a scored token's log-probability (and of the evaluation's KL divergences).
double log_sum_exp(const float* logits, int64_t n);

// prompt_ids: as prompt_token_ids builds them for `images` (encoded, in order of appearance).
// The continuation tokens get the positions greedy decoding would give them (prompt length +
// i + rope delta on all three axes). Throws qvl::Error if a token id is outside the vocabulary
// or prompt + continuation does not fit in context_length.
ScoreResult score_continuation(TextDecoder& decoder, const ModelConfig& config,
                               const std::vector<int64_t>& prompt_ids,
                               const std::vector<SharedImageFeatures>& images,
                               const std::vector<int64_t>& continuation, int64_t context_length,
                               const LogitsCallback& on_logits);

}  // namespace qvl
