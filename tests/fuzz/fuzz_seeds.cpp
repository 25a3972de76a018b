// Writes the binary seed inputs of the fuzz targets that cannot be committed as small text files:
// a safetensors file, pre-packed model headers (which must carry this build's layout
// fingerprint) and a small tokenizer in both forms (cut from the shared Qwen tokenizer.json).
// Usage: fuzz_seeds OUT_DIR TOKENIZER_JSON; writes OUT_DIR/<target>/seed_*.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "base/mapped_file.h"
#include "model/packed_file.h"
#include "model/safetensors_writer.h"
#include "tokenizer/tokenizer.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;  // not ordered_json: its linear key lookup is quadratic on 151k tokens

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) qvl::fail(qvl::ErrorCode::kIo, "cannot write " + path.string());
}

qvl::TensorSpec f32_ramp(const std::string& name, std::vector<int64_t> shape) {
  return {name, qvl::DType::kF32, std::move(shape), [](int64_t offset, int64_t n, uint8_t* out) {
            for (int64_t i = 0; i < n; ++i) {
              const float v = static_cast<float>(offset + i) * 0.25f;
              std::memcpy(out + 4 * i, &v, 4);
            }
          }};
}

void write_safetensors_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  qvl::write_safetensors(
      (dir / "seed_small").string(),
      {f32_ramp("a.weight", {2, 3}), f32_ramp("empty", {0}), qvl::byte_tensor("bytes", "abc")},
      {{{"format", "pt"}}, 0});
}

// Headers a real `qvl quantize` file has, with an embedded config and one packed-tensor entry
// (its size is wrong on purpose in the second seed).
void write_packed_seeds(const fs::path& dir, const std::string& config_json) {
  fs::create_directories(dir);
  qvl::SafeTensorsWriteOptions options;
  options.alignment = qvl::kPackedAlignment;
  options.metadata = {{qvl::kPackedFormatKey, qvl::kPackedFormatName},
                      {qvl::kPackedVersionKey, std::to_string(qvl::kPackedVersion)},
                      {qvl::kPackedLayoutKey, qvl::packed_layout_fingerprint()},
                      {qvl::kPackedQuantKey, "q8"},
                      {qvl::kPackedVisionQuantKey, "bf16"},
                      {qvl::kPackedHeadTiedKey, "true"}};
  const std::string config_name = std::string(qvl::kEmbeddedFilePrefix) + "config.json";
  qvl::write_safetensors((dir / "seed_header").string(),
                         {qvl::byte_tensor(config_name, config_json)}, options);
  options.metadata[std::string(qvl::kPackedTensorPrefix) + qvl::kPackedHeadName] =
      qvl::packed_tensor_entry(qvl::ops::QuantType::kQ8, 32, 64);
  qvl::write_safetensors((dir / "seed_head").string(),
                         {qvl::byte_tensor(config_name, config_json),
                          qvl::byte_tensor(qvl::kPackedHeadName, std::string(256, '\1'))},
                         options);
}

// The byte tokens, the first merges among them and the added tokens: small, and still the
// whole pipeline (normalizer, pretokenizer pattern, decoder).
json small_tokenizer(const json& full) {
  json out = full;
  json vocab = json::object();
  for (const auto& [spelling, id] : full["model"]["vocab"].items()) {
    if (id.get<int64_t>() < 400) vocab[spelling] = id;
  }
  json merges = json::array();
  for (const auto& merge : full["model"]["merges"]) {
    const std::string left = merge[0], right = merge[1];
    if (vocab.contains(left) && vocab.contains(right) && vocab.contains(left + right)) {
      merges.push_back(merge);
    }
    if (merges.size() >= 60) break;
  }
  out["model"]["vocab"] = vocab;
  out["model"]["merges"] = merges;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_seeds OUT_DIR TOKENIZER_JSON\n");
    return 2;
  }
  try {
    const fs::path out = argv[1];
    write_safetensors_seeds(out / "safetensors");
    const json config = {
        {"model_type", "qwen3_vl"},
        {"text_config", {{"hidden_size", 64}, {"num_hidden_layers", 1}, {"vocab_size", 400}}}};
    write_packed_seeds(out / "packed_file", config.dump());
    const qvl::MappedFile full_file(argv[2]);
    const json full = json::parse(
        std::string_view(reinterpret_cast<const char*>(full_file.data()), full_file.size()));
    const json cut = small_tokenizer(full);
    const std::string small = cut.dump();
    // The compact form has a row per id up to the largest: without the added tokens (ids from
    // 151643) it stays a few kilobytes.
    json without_added = cut;
    without_added["added_tokens"] = json::array();
    const qvl::Tokenizer tokenizer = qvl::Tokenizer::from_json_text(without_added.dump());
    fs::create_directories(out / "tokenizer");
    write_bytes(out / "tokenizer" / "seed_json", std::string(1, '\0') + small);
    write_bytes(out / "tokenizer" / "seed_compact", std::string(1, '\1') + tokenizer.to_compact());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
