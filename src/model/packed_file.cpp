#include "model/packed_file.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "model/weights_util.h"

namespace qvl {
namespace {

uint64_t fnv1a(const void* data, size_t n, uint64_t hash) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

constexpr ops::QuantType kPackedTypes[] = {ops::QuantType::kBF16, ops::QuantType::kQ8,
                                           ops::QuantType::kQ4, ops::QuantType::kQ8Strips,
                                           ops::QuantType::kQ4Strips};

// A packed tensor's type; with a --quant name ("qvl.quant") only the user's types.
std::optional<ops::QuantType> packed_type_named(const std::string& name, bool quant_name = false) {
  for (ops::QuantType t : kPackedTypes) {
    if (quant_name && ops::in_strips(t)) continue;
    if (name == ops::quant_type_name(t)) return t;
  }
  return std::nullopt;
}

}  // namespace

std::string packed_layout_fingerprint() {
  // Two groups of rows (the second padded), two blocks of columns, values of mixed sign and
  // magnitude including zeros, so tile order, scale placement and rounding all show.
  constexpr int64_t kRows = 6, kCols = 64;
  std::vector<float> w(kRows * kCols);
  for (int64_t i = 0; i < kRows * kCols; ++i) {
    w[i] = static_cast<float>((i * 37) % 29 - 14) / static_cast<float>(1 + (i % 5)) * 0.37f;
  }
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (ops::QuantType type : kPackedTypes) {
    const ops::PackedMatrix m =
        ops::PackedMatrix::pack({ops::WeightType::kF32, w.data(), kRows, kCols}, type);
    hash = fnv1a(m.bytes(), m.size_bytes(), hash);
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string packed_tensor_entry(ops::QuantType type, int64_t rows, int64_t cols) {
  return std::string(ops::quant_type_name(type)) + " " + std::to_string(rows) + " " +
         std::to_string(cols);
}

std::optional<PackedTensorEntry> parse_packed_tensor_entry(const std::string& value) {
  std::istringstream in(value);
  std::string type, extra;
  long long rows = 0, cols = 0;
  if (!(in >> type >> rows >> cols) || (in >> extra) || rows <= 0 || cols <= 0) {
    return std::nullopt;
  }
  const std::optional<ops::QuantType> t = packed_type_named(type);
  if (!t) return std::nullopt;
  return PackedTensorEntry{*t, rows, cols};
}

bool is_model_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

PackedModelFile PackedModelFile::open(const std::string& path) {
  PackedModelFile f(path, WeightStore::open_files({path}));
  const auto& meta = f.store_.metadata();
  auto value = [&](const char* key) {
    auto it = meta.find(key);
    return it == meta.end() ? std::string() : it->second;
  };
  if (value(kPackedFormatKey) != kPackedFormatName) {
    fail(ErrorCode::kInvalidArgument,
         "'" + path + "' is not a qvl pre-packed model file (no \"" + kPackedFormatKey + "\": \"" +
             kPackedFormatName +
             "\" in its metadata); pass a model folder, or make the file "
             "with `qvl quantize`");
  }
  const std::string version = value(kPackedVersionKey);
  if (version != std::to_string(kPackedVersion)) {
    fail(ErrorCode::kUnsupported,
         "'" + path + "' is a pre-packed model file of version '" + version +
             "'; this qvl reads "
             "version " +
             std::to_string(kPackedVersion) + ". Run `qvl quantize` again.");
  }
  if (value(kPackedLayoutKey) != packed_layout_fingerprint()) {
    fail(ErrorCode::kUnsupported, "'" + path +
                                      "' was packed for other kernel layouts (another qvl "
                                      "version). Run `qvl quantize` again.");
  }
  const std::string quant = value(kPackedQuantKey);
  const std::optional<ops::QuantType> type = packed_type_named(quant, true);
  if (!type) {
    fail(ErrorCode::kCorrupt, "'" + path + "' has an invalid \"" + kPackedQuantKey + "\": '" +
                                  quant + "' (expected bf16, q8 or q4)");
  }
  f.quant_ = *type;
  const std::string vision = f.vision_quant();
  if (vision != "bf16" && vision != "q8") {
    fail(ErrorCode::kCorrupt, "'" + path + "' has an invalid \"" + kPackedVisionQuantKey + "\": '" +
                                  vision + "' (expected bf16 or q8)");
  }
  const size_t prefix = std::strlen(kPackedTensorPrefix);
  for (const auto& [key, entry_text] : meta) {
    if (key.compare(0, prefix, kPackedTensorPrefix) != 0) continue;
    const std::string name = key.substr(prefix);
    const std::optional<PackedTensorEntry> entry = parse_packed_tensor_entry(entry_text);
    if (!entry) {
      fail(ErrorCode::kCorrupt, "'" + path + "': packed tensor '" + name +
                                    "' has an invalid description '" + entry_text +
                                    "' (expected \"<bf16|q8|q4|q8-strips> <rows> <cols>\")");
    }
    if (!f.store_.has(name)) {
      fail(ErrorCode::kCorrupt,
           "'" + path + "' describes a packed tensor '" + name + "' that it does not contain");
    }
    f.store_.declare_packed(name, entry->type, entry->rows, entry->cols);
    // Kernels may use aligned loads; the writer aligns every tensor, so this is damage.
    if (reinterpret_cast<uintptr_t>(f.store_.packed(name)->bytes->data) % kPackedAlignment) {
      fail(ErrorCode::kCorrupt, "'" + path + "': packed tensor '" + name + "' is not " +
                                    std::to_string(kPackedAlignment) + "-byte aligned");
    }
  }
  // Every model has its head packed, except one too narrow to pack (loaded exact instead).
  if (!f.store_.packed(kPackedHeadName)) {
    const std::optional<std::string_view> config = f.file("config.json");
    if (!config ||
        packable_width(
            parse_model_config(std::string(*config), f.origin("config.json")).text.hidden_size)) {
      fail(ErrorCode::kCorrupt,
           "'" + path + "' has no packed output head '" + std::string(kPackedHeadName) + "'");
    }
  }
  return f;
}

std::string PackedModelFile::vision_quant() const {
  auto it = store_.metadata().find(kPackedVisionQuantKey);
  return it == store_.metadata().end() ? "bf16" : it->second;
}

bool PackedModelFile::lm_head_tied() const {
  auto it = store_.metadata().find(kPackedHeadTiedKey);
  return it != store_.metadata().end() && it->second == "true";
}

std::optional<std::string_view> PackedModelFile::blob(const std::string& tensor_name) const {
  if (!store_.has(tensor_name)) return std::nullopt;
  const TensorView& t = store_.get(tensor_name);
  if (t.dtype != DType::kU8 || t.shape.size() != 1) {
    fail(ErrorCode::kCorrupt, "'" + path_ + "': '" + tensor_name + "' is not a byte tensor");
  }
  return std::string_view(reinterpret_cast<const char*>(t.data), t.nbytes);
}

std::optional<std::string_view> PackedModelFile::file(const std::string& name) const {
  return blob(kEmbeddedFilePrefix + name);
}

std::string_view PackedModelFile::required_file(const std::string& name) const {
  const std::optional<std::string_view> text = file(name);
  if (!text) {
    fail(ErrorCode::kCorrupt, "'" + path_ + "' has no embedded " + name + " (tensor '" +
                                  kEmbeddedFilePrefix + name + "'); run `qvl quantize` again");
  }
  return *text;
}

std::string PackedModelFile::origin(const std::string& name) const {
  return path_ + " (embedded " + name + ")";
}

TextWeights load_packed_text_weights(const ModelConfig& config, const WeightStore& store,
                                     const WeightTypes& types, bool lm_head_tied) {
  // The store has no raw "lm_head.weight", so load_text_weights makes its head from the
  // embedding; as kExact that is a view and costs nothing. The packed head replaces it.
  WeightTypes head_as_view = types;
  head_as_view.lm_head = ops::QuantType::kExact;
  TextWeights w = load_text_weights(config, store, head_as_view);
  // A head too narrow to pack was not written packed: it stays the exact view made above.
  if (packable_width(config.text.hidden_size)) {
    w.lm_head = packed_weight(store, kPackedHeadName, config.text.vocab_size,
                              config.text.hidden_size, stored_type(types.lm_head));
  }
  w.tied_lm_head = lm_head_tied;
  return w;
}

}  // namespace qvl
