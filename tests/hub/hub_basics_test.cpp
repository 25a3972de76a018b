// Small pieces: SHA-256, hub ids, URL encoding, environment lookup, progress formatting.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "base/error.h"
#include "hub/download_progress.h"
#include "hub/hub_cache.h"
#include "hub/hub_client.h"
#include "hub/hub_env.h"
#include "hub/model_files.h"
#include "hub/model_spec.h"
#include "hub/sha256.h"

namespace qvl::hub {
namespace {

TEST(Sha256, MatchesPublishedVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 million;
  const std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) million.update(chunk);
  EXPECT_EQ(million.hex_digest(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, StreamingEqualsOneShotForAnySplit) {
  std::string data;
  for (int i = 0; i < 300; ++i) data += static_cast<char>(i * 7);
  const std::string whole = sha256_hex(data);
  for (size_t split : {1u, 55u, 56u, 63u, 64u, 65u, 128u, 299u}) {
    Sha256 hash;
    hash.update(std::string_view(data).substr(0, split));
    hash.update(std::string_view(data).substr(split));
    EXPECT_EQ(hash.hex_digest(), whole) << split;
  }
}

TEST(HubModelId, ParsesRepoAndRevision) {
  auto id = parse_hub_model_id("Qwen/Qwen3-VL-2B-Instruct");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->repo, "Qwen/Qwen3-VL-2B-Instruct");
  EXPECT_EQ(id->revision, "main");
  id = parse_hub_model_id("Qwen/Qwen3-VL-2B-Instruct@refs/pr/3");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->revision, "refs/pr/3");
  for (const char* bad : {"", "Qwen", "a/b/c", "/abs", "Org/", "Org/Name@", "Org/Name@../x",
                          "Org/na me", "./model", "Org/Name@a b", "../x/y"}) {
    EXPECT_FALSE(parse_hub_model_id(bad)) << bad;
  }
}

TEST(HubModelId, ParsesAGgufQuantizationTag) {
  auto id = parse_hub_model_id("Qwen/Qwen3-VL-2B-Instruct-GGUF:Q4_K_M");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->repo, "Qwen/Qwen3-VL-2B-Instruct-GGUF");
  EXPECT_EQ(id->revision, "main");
  EXPECT_EQ(id->quant, "Q4_K_M");
  for (const char* spec : {"Org/Name:UD-Q4_K_XL@v1", "Org/Name@v1:UD-Q4_K_XL"}) {
    id = parse_hub_model_id(spec);
    ASSERT_TRUE(id) << spec;
    EXPECT_EQ(id->repo, "Org/Name") << spec;
    EXPECT_EQ(id->revision, "v1") << spec;
    EXPECT_EQ(id->quant, "UD-Q4_K_XL") << spec;
  }
  EXPECT_EQ(parse_hub_model_id("Org/Name")->quant, "");
  for (const char* bad : {"Org/Name:", "Org/Name:Q4@v1:Q8", "Org/Name:Q 4", "Org/Name:a/b",
                          "Org:x/Name", "Org/Name::Q4"}) {
    EXPECT_FALSE(parse_hub_model_id(bad)) << bad;
  }
}

TEST(HubModelId, CommitHashesAndSafePaths) {
  EXPECT_TRUE(is_commit_hash("0123456789abcdef0123456789abcdef01234567"));
  EXPECT_FALSE(is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"));
  EXPECT_FALSE(is_commit_hash("main"));
  EXPECT_TRUE(is_safe_repo_path("onnx/model.onnx"));
  for (const char* bad : {"", "/etc/passwd", "a/../b", "..", "a//b", "a/./b", "a\\b", "a/"}) {
    EXPECT_FALSE(is_safe_repo_path(bad)) << bad;
  }
}

TEST(HubUrls, EncodeRevisionAndFile) {
  const HubClient client("https://hub.example", "");
  EXPECT_EQ(client.file_url("Org/Name", "refs/pr/1", "sub dir/a+b.json"),
            "https://hub.example/Org/Name/resolve/refs%2Fpr%2F1/sub%20dir/a%2Bb.json");
  EXPECT_EQ(normalize_etag("W/\"abc\""), "abc");
  EXPECT_EQ(normalize_etag("\"abc\""), "abc");
  EXPECT_EQ(HubCache::repo_folder_name("Qwen/Qwen3-VL-2B-Instruct"),
            "models--Qwen--Qwen3-VL-2B-Instruct");
}

TEST(HubEnv, CacheAndTokenLocationsFollowHuggingfaceHub) {
  unsetenv("HF_HUB_CACHE");
  unsetenv("HUGGINGFACE_HUB_CACHE");
  unsetenv("HF_TOKEN_PATH");
  unsetenv("XDG_CACHE_HOME");
  setenv("HF_HOME", "/data/hf", 1);
  EXPECT_EQ(cache_dir_from_env(), "/data/hf/hub");
  EXPECT_EQ(token_path_from_env(), "/data/hf/token");
  setenv("HF_HUB_CACHE", "/fast/cache", 1);
  EXPECT_EQ(cache_dir_from_env(), "/fast/cache");
  unsetenv("HF_HUB_CACHE");
  unsetenv("HF_HOME");
  const std::string saved_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(cache_dir_from_env(), "/home/someone/.cache/huggingface/hub");
  setenv("HOME", saved_home.c_str(), 1);
  setenv("HF_ENDPOINT", "http://mirror.local/", 1);
  EXPECT_EQ(endpoint_from_env(), "http://mirror.local");
  unsetenv("HF_ENDPOINT");
  EXPECT_EQ(endpoint_from_env(), "https://huggingface.co");
  setenv("HF_HUB_OFFLINE", "1", 1);
  EXPECT_TRUE(offline_from_env());
  setenv("HF_HUB_OFFLINE", "0", 1);
  EXPECT_FALSE(offline_from_env());
  unsetenv("HF_HUB_OFFLINE");
}

TEST(ModelFiles, ShardsFromIndexAreUniqueAndSafe) {
  EXPECT_EQ(shards_from_index(R"({"weight_map": {"a": "s1", "b": "s2", "c": "s1"}})"),
            (std::vector<std::string>{"s1", "s2"}));
  EXPECT_THROW(shards_from_index(R"({"weight_map": {"a": "../../etc/passwd"}})"), Error);
  EXPECT_THROW(shards_from_index(R"({"weight_map": {}})"), Error);
  EXPECT_THROW(shards_from_index("not json"), Error);
}

TEST(DownloadProgress, PlainOutputStepsOnBytes) {
  std::ostringstream out;
  DownloadProgress progress(out, true, false);
  progress.begin_file("big.bin", 2, 3, 1000, 0);
  for (int done = 100; done <= 1000; done += 100) progress.update(done);
  progress.end_file();
  const std::string text = out.str();
  EXPECT_NE(text.find("[2/3] big.bin  300 B / 1000 B  30%"), std::string::npos) << text;
  EXPECT_NE(text.find("50%"), std::string::npos) << text;
  EXPECT_NE(text.find("80%"), std::string::npos) << text;
  EXPECT_NE(text.find("[2/3] big.bin: 1000 B done"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(DownloadProgress::format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(DownloadProgress::format_duration(125), "2:05");
}

}  // namespace
}  // namespace qvl::hub
