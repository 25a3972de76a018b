// Picking the GGUF pair of a repository: by the quantization asked for, by the defaults when
// there is a choice, and clear errors when nothing or more than one file fits.
#include "hub/gguf_choice.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace qvl::hub {
namespace {

// As Qwen's Qwen3-VL-2B-Instruct-GGUF lists its files (plus a README).
const std::vector<std::string> kQwenRepo = {
    "README.md",
    "Qwen3VL-2B-Instruct-F16.gguf",
    "Qwen3VL-2B-Instruct-Q4_K_M.gguf",
    "Qwen3VL-2B-Instruct-Q8_0.gguf",
    "mmproj-Qwen3VL-2B-Instruct-F16.gguf",
    "mmproj-Qwen3VL-2B-Instruct-Q8_0.gguf",
};

std::string error_of(const std::vector<std::string>& files, const std::string& quant,
                     const std::string& mmproj_quant = "") {
  try {
    choose_gguf_pair(files, quant, mmproj_quant, "Org/Repo@main");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GgufChoice, NamesAndTags) {
  EXPECT_TRUE(is_gguf_name("a/b/Model-Q8_0.GGUF"));
  EXPECT_FALSE(is_gguf_name("model.gguf.part"));
  EXPECT_FALSE(is_gguf_name(".gguf"));
  EXPECT_TRUE(is_mmproj_name("sub/MMPROJ-x-F16.gguf"));
  EXPECT_FALSE(is_mmproj_name("x-mmproj-F16.gguf"));
  EXPECT_FALSE(is_mmproj_name("mmproj-F16.bin"));
  EXPECT_EQ(gguf_quant_tag("Qwen3VL-2B-Instruct-Q4_K_M.gguf"), "Q4_K_M");
  EXPECT_EQ(gguf_quant_tag("model.q8_0.gguf"), "q8_0");
  EXPECT_EQ(gguf_quant_tag("model.gguf"), "");
}

TEST(GgufChoice, PicksTheAskedQuantizationInAnyCase) {
  GgufChoice c = choose_gguf_pair(kQwenRepo, "Q4_K_M", "", "r");
  EXPECT_EQ(c.text, "Qwen3VL-2B-Instruct-Q4_K_M.gguf");
  EXPECT_EQ(c.mmproj, "mmproj-Qwen3VL-2B-Instruct-F16.gguf");
  c = choose_gguf_pair(kQwenRepo, "f16", "q8_0", "r");
  EXPECT_EQ(c.text, "Qwen3VL-2B-Instruct-F16.gguf");
  EXPECT_EQ(c.mmproj, "mmproj-Qwen3VL-2B-Instruct-Q8_0.gguf");
  // A tag with a dash, as community repositories name theirs; F16 is not BF16's tail.
  const std::vector<std::string> community = {"m-UD-Q4_K_XL.gguf", "m-BF16.gguf",
                                              "mmproj-BF16.gguf"};
  EXPECT_EQ(choose_gguf_pair(community, "UD-Q4_K_XL", "", "r").text, "m-UD-Q4_K_XL.gguf");
  EXPECT_EQ(choose_gguf_pair(community, "Q4_K_XL", "", "r").text, "m-UD-Q4_K_XL.gguf");
  EXPECT_NE(error_of(community, "F16").find("no GGUF language model in F16"), std::string::npos);
}

TEST(GgufChoice, DefaultsPreferWhatQvlRunsLosslessly) {
  // Q8_0 repacks into qvl's default q8 bit for bit; an F16 projector feeds the bf16 tower.
  GgufChoice c = choose_gguf_pair(kQwenRepo, "", "", "r");
  EXPECT_EQ(c.text, "Qwen3VL-2B-Instruct-Q8_0.gguf");
  EXPECT_EQ(c.mmproj, "mmproj-Qwen3VL-2B-Instruct-F16.gguf");
  c = choose_gguf_pair({"m-Q4_K_M.gguf", "m-Q6_K.gguf", "mmproj-Q8_0.gguf"}, "", "", "r");
  EXPECT_EQ(c.text, "m-Q4_K_M.gguf");
  EXPECT_EQ(c.mmproj, "mmproj-Q8_0.gguf");
  // The only one is taken whatever it is.
  EXPECT_EQ(choose_gguf_pair({"m-IQ4_XS.gguf", "mmproj-x.gguf"}, "", "", "r").text,
            "m-IQ4_XS.gguf");
}

TEST(GgufChoice, ClearErrors) {
  EXPECT_EQ(error_of({"README.md", "mmproj-F16.gguf"}, ""),
            "Org/Repo@main has no GGUF language model");
  EXPECT_NE(error_of({"m-Q8_0.gguf"}, "").find("has no GGUF vision projector (mmproj-*.gguf)"),
            std::string::npos);
  const std::string missing = error_of(kQwenRepo, "Q5_K_M");
  EXPECT_NE(missing.find("no GGUF language model in Q5_K_M"), std::string::npos) << missing;
  EXPECT_NE(missing.find("Qwen3VL-2B-Instruct-Q8_0.gguf"), std::string::npos) << missing;
  const std::string several = error_of({"m-Q5_K_S.gguf", "m-Q6_K.gguf", "mmproj-F16.gguf"}, "");
  EXPECT_NE(several.find("several GGUF language models"), std::string::npos) << several;
  EXPECT_NE(several.find("Org/Name:QUANT"), std::string::npos) << several;
  const std::string twice = error_of({"a-Q8_0.gguf", "b-Q8_0.gguf", "mmproj-F16.gguf"}, "Q8_0");
  EXPECT_NE(twice.find("several GGUF language models matching"), std::string::npos) << twice;
  const std::string shard = error_of({"m-Q8_0-00001-of-00002.gguf", "mmproj-F16.gguf"}, "");
  EXPECT_NE(shard.find("one shard of a split GGUF"), std::string::npos) << shard;
}

}  // namespace
}  // namespace qvl::hub
