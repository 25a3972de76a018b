// libFuzzer target: any bytes as a pre-packed model file (`qvl quantize` output). Opening checks
// the header, version, layout and every packed tensor's size; it must succeed or throw
// qvl::Error, and what it then hands out (embedded files, blobs) must lie within the file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "fuzz_input_file.h"
#include "model/packed_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = qvl::fuzz::write_input_file("model.qvl", data, size);
  try {
    const qvl::PackedModelFile file = qvl::PackedModelFile::open(path);
    size_t seen = 0;
    for (const char* name : {"config.json", "generation_config.json", "chat_template.json"}) {
      if (const auto text = file.file(name)) seen += text->size();
    }
    if (const auto blob = file.blob(qvl::kCompactTokenizerName)) seen += blob->size();
    if (seen > size) std::abort();
    (void)file.vision_quant();
    (void)file.lm_head_tied();
  } catch (const qvl::Error&) {
  }
  (void)qvl::parse_packed_tensor_entry(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
