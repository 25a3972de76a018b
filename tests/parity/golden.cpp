#include "golden.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/mapped_file.h"

namespace qvl::testing {

std::string golden_dir() {
  const char* env = std::getenv("QVL_GOLDEN_DIR");
  if (env != nullptr && *env != '\0') return env;
  return std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";
}

nlohmann::json load_manifest() {
  return nlohmann::json::parse(read_text_file(golden_dir() + "/manifest.json"));
}

std::vector<GoldenCase> load_golden_cases() {
  std::vector<GoldenCase> out;
  const auto manifest = load_manifest();
  for (const auto& c : manifest["cases"]) {
    GoldenCase g;
    g.name = c["name"].get<std::string>();
    g.manifest = c;
    g.tensors =
        std::make_shared<SafeTensorsFile>(golden_dir() + "/" + c["file"].get<std::string>());
    out.push_back(std::move(g));
  }
  return out;
}

void for_each_golden_case(const std::function<void(const std::string&)>& check) {
  std::vector<std::string> names;
  const nlohmann::json manifest = load_manifest();
  for (const auto& c : manifest["cases"]) names.push_back(c["name"].get<std::string>());
  if (names.empty()) {
    ADD_FAILURE() << "the golden folder " << golden_dir() << " has no cases in its manifest";
    return;
  }
  for (const std::string& name : names) {
    SCOPED_TRACE("golden case " + name + " of " + golden_dir());
    check(name);
    std::printf("[parity] case %s checked\n", name.c_str());
  }
}

double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (std::isnan(d)) return INFINITY;
    m = std::max(m, d);
  }
  return m;
}

GenerationRequest greedy_request(const GoldenCase& c) {
  GenerationRequest req;
  const auto& images = c.manifest["images"];
  size_t next_image = 0;
  for (const auto& m : c.manifest["messages"]) {
    Message msg;
    msg.role = m["role"].get<std::string>();
    if (m["content"].is_string()) {
      msg.parts.push_back({ContentPart::Kind::kText, m["content"].get<std::string>(), -1});
    } else {
      msg.content_is_string = false;
      for (const auto& part : m["content"]) {
        if (part["type"] == "image") {
          const MappedFile f(golden_dir() + "/" + images.at(next_image)["file"].get<std::string>());
          req.images.push_back({std::vector<uint8_t>(f.data(), f.data() + f.size()), 0, 0});
          msg.parts.push_back({ContentPart::Kind::kImage, "", static_cast<int>(next_image++)});
        } else {
          msg.parts.push_back({ContentPart::Kind::kText, part["text"].get<std::string>(), -1});
        }
      }
    }
    req.messages.push_back(std::move(msg));
  }
  req.sampling.temperature = 0;
  // As many tokens as the golden run made (16 in most folders, 24 in qwen3vl-tiny-moe).
  req.sampling.max_tokens = static_cast<int>(c.manifest["generated_tokens"].size());
  req.sampling.ignore_eos = true;
  return req;
}

}  // namespace qvl::testing
