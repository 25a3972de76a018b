#include "model/config_json.h"

namespace qvl {

nlohmann::ordered_json model_config_json(const ModelConfig& c) {
  const TextConfig& t = c.text;
  const VisionConfig& v = c.vision;
  nlohmann::ordered_json text = {{"vocab_size", t.vocab_size},
                                 {"hidden_size", t.hidden_size},
                                 {"num_hidden_layers", t.num_layers},
                                 {"num_attention_heads", t.num_heads},
                                 {"num_key_value_heads", t.num_kv_heads},
                                 {"head_dim", t.head_dim},
                                 {"intermediate_size", t.intermediate_size},
                                 {"max_position_embeddings", t.max_position_embeddings},
                                 {"rms_norm_eps", t.rms_norm_eps},
                                 {"rope_theta", t.rope_theta},
                                 {"attention_bias", t.attention_bias},
                                 {"hidden_act", t.hidden_act},
                                 {"rope_scaling",
                                  {{"rope_type", "default"},
                                   {"mrope_section", t.mrope_section},
                                   {"mrope_interleaved", t.mrope_interleaved}}},
                                 {"tie_word_embeddings", c.tie_word_embeddings}};
  nlohmann::ordered_json vision = {{"depth", v.depth},
                                   {"hidden_size", v.hidden_size},
                                   {"num_heads", v.num_heads},
                                   {"intermediate_size", v.intermediate_size},
                                   {"patch_size", v.patch_size},
                                   {"temporal_patch_size", v.temporal_patch_size},
                                   {"spatial_merge_size", v.spatial_merge_size},
                                   {"in_channels", v.in_channels},
                                   {"out_hidden_size", v.out_hidden_size},
                                   {"num_position_embeddings", v.num_position_embeddings},
                                   {"deepstack_visual_indexes", v.deepstack_visual_indexes},
                                   {"hidden_act", v.hidden_act}};
  const bool experts = t.num_experts > 0;
  if (experts) {
    text["num_experts"] = t.num_experts;
    text["num_experts_per_tok"] = t.num_experts_per_tok;
    text["moe_intermediate_size"] = t.moe_intermediate_size;
    text["decoder_sparse_step"] = t.decoder_sparse_step;
    text["mlp_only_layers"] = t.mlp_only_layers;
    text["norm_topk_prob"] = true;
  }
  nlohmann::ordered_json out = {
      {"architectures",
       {experts ? "Qwen3VLMoeForConditionalGeneration" : "Qwen3VLForConditionalGeneration"}},
      {"model_type", experts ? "qwen3_vl_moe" : "qwen3_vl"},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"image_token_id", c.image_token_id},
      {"vision_start_token_id", c.vision_start_token_id},
      {"vision_end_token_id", c.vision_end_token_id},
      {"text_config", text},
      {"vision_config", vision}};
  if (c.video_token_id >= 0) out["video_token_id"] = c.video_token_id;
  return out;
}

nlohmann::ordered_json generation_config_json(const GenerationConfig& g) {
  nlohmann::ordered_json out = {{"eos_token_id", g.eos_token_ids},
                                {"do_sample", g.do_sample},
                                {"temperature", g.temperature},
                                {"top_p", g.top_p},
                                {"top_k", g.top_k},
                                {"repetition_penalty", g.repetition_penalty}};
  if (g.pad_token_id) out["pad_token_id"] = *g.pad_token_id;
  return out;
}

}  // namespace qvl
