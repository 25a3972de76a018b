// libFuzzer target: any bytes as a .safetensors file (8-byte header length, JSON header, data).
// Opening must either succeed with every tensor inside the file or throw qvl::Error; reading a
// float tensor must then stay within its bytes (past the mapping it would fault).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "base/error.h"
#include "fuzz_input_file.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = qvl::fuzz::write_input_file("model.safetensors", data, size);
  try {
    const qvl::SafeTensorsFile file(path);
    for (const auto& [name, tensor] : file.tensors()) {
      if (tensor.nbytes != static_cast<size_t>(tensor.numel()) * qvl::dtype_size(tensor.dtype)) {
        std::abort();
      }
      if (tensor.nbytes > 0 && tensor.data == nullptr) std::abort();
      if (tensor.numel() <= 4096) {
        try {
          (void)tensor.to_f32();
        } catch (const qvl::Error&) {  // not a float type
        }
      }
    }
  } catch (const qvl::Error&) {
  }
  return 0;
}
