// Access to a golden folder (manifest.json + cases/*.safetensors + the model files).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/safetensors.h"
#include "qvl/engine.h"

namespace qvl::testing {

// QVL_GOLDEN_DIR if set, else the shared tiny model.
std::string golden_dir();

struct GoldenCase {
  std::string name;
  nlohmann::json manifest;  // this case's manifest entry
  std::shared_ptr<SafeTensorsFile> tensors;
  bool has_images() const { return !manifest["images"].empty(); }
  bool has(const std::string& key) const { return tensors->find(key) != nullptr; }
  std::vector<float> f32(const std::string& key) const { return tensors->get(key).to_f32(); }
  std::vector<int64_t> i64(const std::string& key) const { return tensors->get(key).to_i64(); }
};

std::vector<GoldenCase> load_golden_cases();
nlohmann::json load_manifest();

// Largest |a - b|; sizes must match (checked by the caller via EXPECT on size()).
double max_abs_diff(const float* a, const float* b, size_t n);

// Runs check(case_name) for every case in the manifest of golden_dir(), read when the test runs
// (so QVL_GOLDEN_DIR set then is honoured whatever folder the tests were listed from), each under
// a SCOPED_TRACE with its name. A folder whose manifest yields no case fails the test.
void for_each_golden_case(const std::function<void(const std::string&)>& check);

// The case's conversation (images read from the golden folder) as a greedy request for as many
// tokens as the golden run made, past end-of-sequence: what the golden tokens were generated with.
GenerationRequest greedy_request(const GoldenCase& c);

}  // namespace qvl::testing
