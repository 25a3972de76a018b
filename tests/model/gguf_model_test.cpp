// A Qwen3-VL GGUF pair read back as the model: configuration, tensor names and shapes, values
// per type, and the exact path's logits against the same weights from safetensors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <tuple>

#include "base/error.h"
#include "gguf_test_writer.h"
#include "gguf_tiny_writer.h"
#include "model/config.h"
#include "model/gguf_config.h"
#include "model/gguf_dequant.h"
#include "model/gguf_repack.h"
#include "model/gguf_weights.h"
#include "model/safetensors_writer.h"
#include "model/text_decoder.h"
#include "model_test_util.h"

namespace qvl {
namespace {

const std::string kTiny = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";

std::string temp_dir(const std::string& tag) {
  const std::string dir = ::testing::TempDir() + "/qvl_gguf_" + tag;
  EXPECT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  return dir;
}

std::shared_ptr<GgufPair> write_pair(GgmlType type, const std::string& tag) {
  const std::string dir = temp_dir(tag);
  testing::TinyGgufWriter(kTiny, type).write(dir + "/model.gguf", dir + "/mmproj.gguf");
  return std::make_shared<GgufPair>(
      GgufPair{GgufFile::open(dir + "/model.gguf"), GgufFile::open(dir + "/mmproj.gguf")});
}

TEST(GgufModel, ConfigEqualsConfigJson) {
  const auto pair = write_pair(GgmlType::kBF16, "config");
  const ModelConfig want = load_model_config(kTiny);
  const ModelConfig got = gguf_model_config(pair->text, pair->vision);
  const TextConfig &a = want.text, &b = got.text;
  EXPECT_EQ(b.vocab_size, a.vocab_size);
  EXPECT_EQ(b.hidden_size, a.hidden_size);
  EXPECT_EQ(b.num_layers, a.num_layers);
  EXPECT_EQ(b.num_heads, a.num_heads);
  EXPECT_EQ(b.num_kv_heads, a.num_kv_heads);
  EXPECT_EQ(b.head_dim, a.head_dim);
  EXPECT_EQ(b.intermediate_size, a.intermediate_size);
  EXPECT_EQ(b.max_position_embeddings, a.max_position_embeddings);
  EXPECT_EQ(b.rms_norm_eps, a.rms_norm_eps);
  EXPECT_EQ(b.rope_theta, a.rope_theta);
  EXPECT_EQ(b.mrope_section, a.mrope_section);
  EXPECT_TRUE(b.mrope_interleaved);
  const VisionConfig &v = want.vision, &w = got.vision;
  EXPECT_EQ(w.depth, v.depth);
  EXPECT_EQ(w.hidden_size, v.hidden_size);
  EXPECT_EQ(w.num_heads, v.num_heads);
  EXPECT_EQ(w.intermediate_size, v.intermediate_size);
  EXPECT_EQ(w.patch_size, v.patch_size);
  EXPECT_EQ(w.temporal_patch_size, v.temporal_patch_size);
  EXPECT_EQ(w.spatial_merge_size, v.spatial_merge_size);
  EXPECT_EQ(w.in_channels, v.in_channels);
  EXPECT_EQ(w.out_hidden_size, v.out_hidden_size);
  EXPECT_EQ(w.num_position_embeddings, v.num_position_embeddings);
  EXPECT_EQ(w.deepstack_visual_indexes, v.deepstack_visual_indexes);
  EXPECT_EQ(w.layer_norm_eps, v.layer_norm_eps);
  EXPECT_EQ(got.tie_word_embeddings, want.tie_word_embeddings);
  EXPECT_EQ(got.image_token_id, want.image_token_id);
  EXPECT_EQ(got.video_token_id, want.video_token_id);
  EXPECT_EQ(got.vision_start_token_id, want.vision_start_token_id);
  EXPECT_EQ(got.vision_end_token_id, want.vision_end_token_id);
  const GenerationConfig g = gguf_generation_config(pair->text);
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{151645, 151643}));
}

TEST(GgufModel, RefusesAnotherArchitectureAndAMismatchedPair) {
  const auto pair = write_pair(GgmlType::kBF16, "arch");
  try {
    gguf_model_config(pair->vision, pair->vision);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("'clip' model"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gguf_model_config(pair->text, pair->text), Error);
}

// BF16: every tensor is the checkpoint's own bytes, viewed in place; the patch kernel is
// reassembled from its frame slices exactly.
TEST(GgufModel, Bf16TensorsAreTheCheckpointInPlace) {
  const auto pair = write_pair(GgmlType::kBF16, "bf16");
  const ModelConfig config = gguf_model_config(pair->text, pair->vision);
  GgufLoadStats stats;
  const WeightStore got = gguf_weight_store(pair, config, &stats);
  const WeightStore want = WeightStore::open_folder(kTiny);
  EXPECT_EQ(got.names(), want.names());
  EXPECT_EQ(stats.dequantized, 1);  // the patch kernel only
  EXPECT_EQ(stats.ignored, 0);
  for (const std::string& name : want.names()) {
    const TensorView &a = want.get(name), &b = got.get(name);
    ASSERT_EQ(b.shape, a.shape) << name;
    EXPECT_EQ(b.to_f32(), a.to_f32()) << name;
    if (a.shape.size() == 2) {
      EXPECT_EQ(b.dtype, DType::kBF16) << name;  // not converted
    }
  }
}

// Q8_0: matrices are dequantized (fp32) and equal ggml's dequantization of the stored blocks.
TEST(GgufModel, Q8TensorsAreTheirDequantizedValues) {
  const auto pair = write_pair(GgmlType::kQ8_0, "q8");
  const ModelConfig config = gguf_model_config(pair->text, pair->vision);
  const WeightStore got = gguf_weight_store(pair, config);
  const GgufTensor& q = pair->text.tensor("blk.1.attn_q.weight");
  EXPECT_EQ(q.type, GgmlType::kQ8_0);
  std::vector<float> want(static_cast<size_t>(q.numel()));
  gguf_dequantize(q.type, q.data, q.numel(), want.data());
  const TensorView& t = got.get("model.language_model.layers.1.self_attn.q_proj.weight");
  EXPECT_EQ(t.dtype, DType::kF32);
  EXPECT_EQ(t.to_f32(), want);
  // Within Q8_0's rounding of the checkpoint (half a step of absmax / 127 per block).
  const std::vector<float> orig = WeightStore::open_folder(kTiny)
                                      .get("model.language_model.layers.1.self_attn.q_proj.weight")
                                      .to_f32();
  for (size_t i = 0; i < orig.size(); ++i) ASSERT_NEAR(want[i], orig[i], 2e-3f) << i;
}

// The exact path on the GGUF's weights equals the exact path on the same values in safetensors.
TEST(GgufModel, ExactLogitsEqualSafetensorsOfTheDequantizedWeights) {
  for (const GgmlType type : {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    SCOPED_TRACE(ggml_type_name(type));
    const auto pair = write_pair(type, std::string("logits_") + ggml_type_name(type));
    const ModelConfig config = gguf_model_config(pair->text, pair->vision);
    const WeightStore gguf = gguf_weight_store(pair, config);
    const std::string dir = temp_dir(std::string("st_") + ggml_type_name(type));
    std::vector<TensorSpec> specs;
    std::vector<std::vector<float>> values;
    for (const std::string& name : gguf.names()) values.push_back(gguf.get(name).to_f32());
    size_t k = 0;
    for (const std::string& name : gguf.names()) {
      const std::vector<float>* v = &values[k++];
      specs.push_back(
          {name, DType::kF32, gguf.get(name).shape, [v](int64_t off, int64_t n, uint8_t* out) {
             std::memcpy(out, v->data() + off, static_cast<size_t>(n) * 4);
           }});
    }
    write_safetensors(dir + "/model.safetensors", specs);
    const WeightStore st = WeightStore::open_folder(dir);
    const auto logits = [&](const WeightStore& store) {
      const TextWeights w = load_text_weights(config, store);
      TextDecoder decoder(config.text, w);
      KVCache cache = decoder.new_cache();
      std::vector<float> hidden;
      return testing::prefill_last_logits(decoder, config, cache,
                                          {151644, 872, 198, 9707, 1879, 151645}, hidden);
    };
    const std::vector<float> a = logits(gguf), b = logits(st);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_NEAR(a[i], b[i], 1e-5f * (1.0f + std::fabs(b[i]))) << i;
    }
  }
}

TEST(GgufModel, TensorNamesMapOntoHuggingFaceNames) {
  const std::vector<int64_t> deep = {5, 11, 17};
  EXPECT_EQ(hf_tensor_name("blk.12.attn_output.weight", false, deep),
            "model.language_model.layers.12.self_attn.o_proj.weight");
  EXPECT_EQ(hf_tensor_name("token_embd.weight", false, deep),
            "model.language_model.embed_tokens.weight");
  EXPECT_EQ(hf_tensor_name("output.weight", false, deep), "lm_head.weight");
  EXPECT_EQ(hf_tensor_name("v.deepstack.11.fc2.bias", true, deep),
            "model.visual.deepstack_merger_list.1.linear_fc2.bias");
  EXPECT_EQ(hf_tensor_name("v.deepstack.12.fc2.bias", true, deep), "");
  EXPECT_EQ(hf_tensor_name("v.blk.3.attn_qkv.weight", true, deep),
            "model.visual.blocks.3.attn.qkv.weight");
  EXPECT_EQ(hf_tensor_name("mm.2.bias", true, deep), "model.visual.merger.linear_fc2.bias");
  EXPECT_EQ(hf_tensor_name("v.post_ln.weight", true, deep), "model.visual.merger.norm.weight");
  EXPECT_EQ(hf_tensor_name("blk.x.attn_q.weight", false, deep), "");
  EXPECT_EQ(hf_tensor_name("blk.1.attn_q.scale", false, deep), "");
  EXPECT_EQ(hf_tensor_name("rope_freqs.weight", false, deep), "");
}

// K-quant tensors (rows of 256) load through the mapping as their dequantized values; a type
// qvl cannot read is refused naming the tensor.
TEST(GgufModel, KQuantTensorsLoadAndUnknownTypesAreRefused) {
  std::vector<uint8_t> q4k(144 * 2), q5k(176 * 2), q6k(210 * 3);
  for (size_t i = 0; i < q4k.size(); ++i) q4k[i] = static_cast<uint8_t>(i * 37 + 11);
  for (size_t i = 0; i < q5k.size(); ++i) q5k[i] = static_cast<uint8_t>(i * 53 + 7);
  for (size_t i = 0; i < q6k.size(); ++i) q6k[i] = static_cast<uint8_t>(i * 29 + 3);
  for (size_t b = 0; b < 2; ++b) {  // finite half scales: 0.01 (0x211F) and 0.005 (0x1D1F)
    std::memcpy(q4k.data() + b * 144, "\x1F\x21\x1F\x1D", 4);
    std::memcpy(q5k.data() + b * 176, "\x1F\x21\x1F\x1D", 4);
  }
  for (size_t b = 0; b < 3; ++b) std::memcpy(q6k.data() + b * 210 + 208, "\x1F\x21", 2);
  testing::GgufBuilder text, vision;
  text.tensor("blk.0.ffn_down.weight", GgmlType::kQ4_K, {256, 2}, q4k);
  text.tensor("blk.0.ffn_up.weight", GgmlType::kQ5_K, {256, 2}, q5k);
  text.tensor("token_embd.weight", GgmlType::kQ6_K, {256, 3}, q6k);
  vision.tensor("v.patch_embd.weight", GgmlType::kF32, {1, 1, 1, 2}, testing::f32_bytes({1, 2}));
  const auto t = text.bytes(), v = vision.bytes();
  auto pair = std::make_shared<GgufPair>(GgufPair{GgufFile::parse(t.data(), t.size(), "t.gguf"),
                                                  GgufFile::parse(v.data(), v.size(), "v.gguf")});
  const WeightStore store = gguf_weight_store(pair, ModelConfig{});
  for (const auto& [hf, g] : std::vector<std::pair<std::string, std::string>>{
           {"model.language_model.layers.0.mlp.down_proj.weight", "blk.0.ffn_down.weight"},
           {"model.language_model.layers.0.mlp.up_proj.weight", "blk.0.ffn_up.weight"},
           {"model.language_model.embed_tokens.weight", "token_embd.weight"}}) {
    const GgufTensor& src = pair->text.tensor(g);
    std::vector<float> want(static_cast<size_t>(src.numel()));
    gguf_dequantize(src.type, src.data, src.numel(), want.data());
    EXPECT_EQ(store.get(hf).shape, src.torch_shape()) << hf;
    EXPECT_EQ(store.get(hf).to_f32(), want) << hf;
  }
  testing::GgufBuilder bad = text;
  bad.tensor("blk.0.attn_q.weight", GgmlType::kQ2_K, {256, 1}, std::vector<uint8_t>(84, 0));
  const auto bb = bad.bytes();
  pair->text = GgufFile::parse(bb.data(), bb.size(), "bad.gguf");
  try {
    gguf_weight_store(pair, ModelConfig{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("'blk.0.attn_q.weight'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Q2_K"), std::string::npos);
  }
}

}  // namespace
}  // namespace qvl

namespace qvl {
namespace {

// Q8_0 repacked as q8 strips: the very bytes qvl's packer makes from the dequantized values.
TEST(GgufModel, Q8RepackEqualsPackingTheDequantizedWeights) {
  const auto pair = write_pair(GgmlType::kQ8_0, "repack");
  for (const char* name : {"blk.0.ffn_down.weight", "blk.2.attn_q.weight", "token_embd.weight"}) {
    SCOPED_TRACE(name);
    const GgufTensor& t = pair->text.tensor(name);
    const auto bytes = repack_q8_0_as_strips(t);
    ASSERT_TRUE(bytes.has_value());
    std::vector<float> values(static_cast<size_t>(t.numel()));
    gguf_dequantize(t.type, t.data, t.numel(), values.data());
    const ops::PackedMatrix want = ops::PackedMatrix::pack(
        {ops::WeightType::kF32, values.data(), t.dims[1], t.dims[0]}, ops::QuantType::kQ8Strips);
    ASSERT_EQ(bytes->size(), want.size_bytes());
    EXPECT_EQ(std::memcmp(bytes->data(), want.bytes(), want.size_bytes()), 0);
    // And every weight reads back as d * q.
    const ops::PackedMatrix got = ops::PackedMatrix::view(ops::QuantType::kQ8Strips, t.dims[1],
                                                          t.dims[0], bytes->data(), bytes->size());
    std::vector<float> row(static_cast<size_t>(t.dims[0]));
    for (int64_t r = 0; r < t.dims[1]; r += 7) {
      got.row_to_f32(r, row.data());
      for (int64_t c = 0; c < t.dims[0]; ++c) {
        ASSERT_EQ(row[c], values[r * t.dims[0] + c]) << r << "," << c;
      }
    }
  }
  // The loader's store declares them pre-packed when the model runs in q8.
  const ModelConfig config = gguf_model_config(pair->text, pair->vision);
  GgufLoadStats stats;
  const WeightStore store = gguf_weight_store(
      pair, config, &stats, {ops::QuantType::kQ8Strips, ops::QuantType::kQ8Strips});
  const PackedTensor* p = store.packed("model.language_model.layers.0.mlp.down_proj.weight");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->type, ops::QuantType::kQ8Strips);
  EXPECT_EQ(p->rows, config.text.hidden_size);
  EXPECT_EQ(p->cols, config.text.intermediate_size);
  EXPECT_NE(store.packed("model.visual.blocks.1.attn.qkv.weight"), nullptr);
  EXPECT_EQ(store.packed("model.language_model.embed_tokens.weight"), nullptr);  // looked up
  EXPECT_EQ(stats.repacked, 4 * 7 + 4 * 4 + 2 + 3 * 2);
}

// Other quantized matrices the model runs packed are packed from their dequantized values chunk
// by chunk: the same bytes as packing the whole fp32 matrix, and no fp32 copy in the store.
TEST(GgufModel, QuantizedMatricesArePackedWithoutAnFp32Copy) {
  const auto pair = write_pair(GgmlType::kQ4_0, "pack_q4");
  const ModelConfig config = gguf_model_config(pair->text, pair->vision);
  GgufLoadStats stats;
  const WeightStore store =
      gguf_weight_store(pair, config, &stats, {ops::QuantType::kQ4Strips, ops::QuantType::kBF16});
  for (const auto& [gguf_name, hf, type] :
       std::vector<std::tuple<std::string, std::string, ops::QuantType>>{
           {"blk.3.ffn_gate.weight", "model.language_model.layers.3.mlp.gate_proj.weight",
            ops::QuantType::kQ4Strips},
           {"v.blk.2.ffn_up.weight", "model.visual.blocks.2.mlp.linear_fc1.weight",
            ops::QuantType::kBF16}}) {
    SCOPED_TRACE(hf);
    const GgufFile& f = gguf_name[0] == 'v' ? pair->vision : pair->text;
    const GgufTensor& t = f.tensor(gguf_name);
    ASSERT_EQ(t.type, GgmlType::kQ4_0);
    std::vector<float> values(static_cast<size_t>(t.numel()));
    gguf_dequantize(t.type, t.data, t.numel(), values.data());
    const ops::PackedMatrix want =
        ops::PackedMatrix::pack({ops::WeightType::kF32, values.data(), t.dims[1], t.dims[0]}, type);
    const PackedTensor* p = store.packed(hf);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->type, type);
    ASSERT_EQ(p->bytes->nbytes, want.size_bytes());
    EXPECT_EQ(std::memcmp(p->bytes->data, want.bytes(), want.size_bytes()), 0);
    EXPECT_FALSE(store.has(hf));  // no fp32 view of it
  }
  EXPECT_EQ(stats.repacked, 0);
  EXPECT_EQ(stats.packed, 4 * 7 + 4 * 4 + 2 + 3 * 2);
}

// Blocks qvl's symmetric q8 cannot hold as they are stay on the dequantized path.
TEST(GgufModel, Q8BlocksOutsideQvlsRangeAreNotRepacked) {
  std::vector<uint8_t> block(34, 0);
  const uint16_t d = 0x2000;
  std::memcpy(block.data(), &d, 2);
  block[2] = 100;  // largest |q| 100: qvl would rescale it
  testing::GgufBuilder b;
  b.tensor("m", GgmlType::kQ8_0, {32, 1}, block);
  block[2] = 0x80;  // q = -128
  b.tensor("n", GgmlType::kQ8_0, {32, 1}, block);
  block[2] = 127;
  b.tensor("o", GgmlType::kQ8_0, {32, 1}, block);
  const uint16_t negative = 0xA000;
  std::memcpy(block.data(), &negative, 2);
  b.tensor("p", GgmlType::kQ8_0, {32, 1}, block);
  const auto bytes = b.bytes();
  const GgufFile f = GgufFile::parse(bytes.data(), bytes.size(), "q.gguf");
  EXPECT_FALSE(repack_q8_0_as_strips(f.tensor("m")).has_value());
  EXPECT_FALSE(repack_q8_0_as_strips(f.tensor("n")).has_value());
  EXPECT_TRUE(repack_q8_0_as_strips(f.tensor("o")).has_value());
  EXPECT_FALSE(repack_q8_0_as_strips(f.tensor("p")).has_value());
}

}  // namespace
}  // namespace qvl

namespace qvl {
namespace {

// /v1/models and /props name a GGUF's quantization as llama.cpp does: general.file_type when
// the converter wrote it, else (projectors, hand-made files) the type most matrix bytes have.
TEST(GgufModel, FileTypeIsTheFilesOwnNameOrItsPredominantMatrixType) {
  const auto q8 = write_pair(GgmlType::kQ8_0, "file_type");
  EXPECT_EQ(gguf_file_type(q8->text), "Q8_0");
  const auto f16 = write_pair(GgmlType::kF16, "file_type_f16");
  EXPECT_EQ(gguf_file_type(f16->vision), "F16");

  const auto parsed = [](const testing::GgufBuilder& b) {
    const std::vector<uint8_t> bytes = b.bytes();
    return gguf_file_type(GgufFile::parse(bytes.data(), bytes.size(), "test.gguf"));
  };
  testing::GgufBuilder b;
  b.tensor("norm", GgmlType::kF32, {64}, std::vector<uint8_t>(256));
  b.tensor("small", GgmlType::kQ8_0, {32, 1}, std::vector<uint8_t>(34));
  b.tensor("big", GgmlType::kF16, {32, 4}, std::vector<uint8_t>(256));
  EXPECT_EQ(parsed(b), "F16") << "1-D tensors do not count, the bigger matrix type wins";
  testing::GgufBuilder named = b;
  named.u32("general.file_type", 15);
  EXPECT_EQ(parsed(named), "Q4_K_M");
  testing::GgufBuilder bf16 = b;
  bf16.u32("general.file_type", 32);
  EXPECT_EQ(parsed(bf16), "BF16");
  testing::GgufBuilder unknown = b;
  unknown.u32("general.file_type", 1000);
  EXPECT_EQ(parsed(unknown), "F16");
  EXPECT_EQ(parsed(testing::GgufBuilder()), "F32");
}

}  // namespace
}  // namespace qvl
