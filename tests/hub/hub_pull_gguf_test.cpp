// qvl pull and -m of a GGUF repository against a fake hub: only the chosen language model and
// vision projector are fetched, the cached pair is used without the network (and another
// quantization of the same snapshot is fetched beside it), and bad choices are clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <sstream>

#include "base/error.h"
#include "hub/fake_hub.h"
#include "hub/hub_cache.h"
#include "hub/model_pull.h"
#include "hub/temp_dir.h"

namespace qvl::hub {
namespace {
namespace fs = std::filesystem;
using testing::FakeFile;
using testing::FakeHub;
using testing::read_whole_file;

constexpr const char* kRepo = "qvl-test/tiny-GGUF";
constexpr const char* kCommit = "89abcdef0123456789abcdef0123456789abcdef";

class HubPullGgufTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("HF_HUB_OFFLINE");
    files_ = {{"README.md", "# tiny"},
              {"tiny-F16.gguf", std::string(3000, 'f'), true},
              {"tiny-Q8_0.gguf", std::string(2000, '8'), true},
              {"tiny-Q4_K_M.gguf", std::string(1000, '4'), true},
              {"mmproj-tiny-F16.gguf", std::string(900, 'v'), true},
              {"mmproj-tiny-Q8_0.gguf", std::string(500, 'w'), true}};
    hub_.add_repo(kRepo, kCommit, files_);
  }

  ResolveOptions options() {
    ResolveOptions opts;
    opts.endpoint = hub_.endpoint();
    opts.cache_dir = cache_dir_.path();
    opts.token = "unused-token";
    opts.progress_out = &progress_;
    return opts;
  }

  std::string snapshot_file(const std::string& name) const {
    return HubCache(cache_dir_.path()).snapshot_file(kRepo, kCommit, name);
  }

  std::string error_of(const std::function<void()>& action) {
    try {
      action();
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  }

  FakeHub hub_;
  testing::TempDir cache_dir_;
  std::ostringstream progress_;
  std::vector<FakeFile> files_;
};

TEST_F(HubPullGgufTest, PullsOnlyTheChosenPair) {
  const PullResult r = pull_model({kRepo, "main", "Q4_K_M"}, options());
  EXPECT_EQ(r.files_total, 2);
  EXPECT_EQ(r.files_fetched, 2);
  EXPECT_EQ(r.bytes_fetched, 1000 + 900);
  EXPECT_EQ(r.model_path, snapshot_file("tiny-Q4_K_M.gguf"));
  EXPECT_EQ(r.mmproj_path, snapshot_file("mmproj-tiny-F16.gguf"));
  EXPECT_EQ(read_whole_file(r.model_path), std::string(1000, '4'));
  EXPECT_EQ(read_whole_file(r.mmproj_path), std::string(900, 'v'));
  for (const char* absent :
       {"README.md", "tiny-F16.gguf", "tiny-Q8_0.gguf", "mmproj-tiny-Q8_0.gguf"}) {
    EXPECT_FALSE(fs::exists(snapshot_file(absent))) << absent;
  }
}

TEST_F(HubPullGgufTest, DefaultsAndProjectorChoice) {
  ResolveOptions opts = options();
  opts.mmproj_quant = "q8_0";
  const PullResult r = pull_model({kRepo, "main"}, opts);
  EXPECT_EQ(r.model_path, snapshot_file("tiny-Q8_0.gguf"));
  EXPECT_EQ(r.mmproj_path, snapshot_file("mmproj-tiny-Q8_0.gguf"));
}

TEST_F(HubPullGgufTest, ResolveUsesTheCachedPairAndFetchesAnotherQuantizationBesideIt) {
  std::string mmproj;
  const std::string q4 = resolve_model(std::string(kRepo) + ":Q4_K_M", options(), &mmproj);
  EXPECT_EQ(q4, snapshot_file("tiny-Q4_K_M.gguf"));
  EXPECT_EQ(mmproj, snapshot_file("mmproj-tiny-F16.gguf"));
  hub_.clear_requests();
  mmproj.clear();
  // The snapshot's only pair serves a spec without a quantization, with no request at all.
  EXPECT_EQ(resolve_model(kRepo, options(), &mmproj), q4);
  EXPECT_EQ(mmproj, snapshot_file("mmproj-tiny-F16.gguf"));
  EXPECT_EQ(resolve_model(std::string(kRepo) + ":q4_k_m", options()), q4);
  EXPECT_TRUE(hub_.requests().empty());

  // Another quantization: fetched into the same snapshot; the projector is not fetched again.
  mmproj.clear();
  const std::string f16 = resolve_model(std::string(kRepo) + ":F16", options(), &mmproj);
  EXPECT_EQ(f16, snapshot_file("tiny-F16.gguf"));
  EXPECT_EQ(mmproj, snapshot_file("mmproj-tiny-F16.gguf"));
  EXPECT_EQ(hub_.content_requests(), 2);  // one file: its /resolve/ redirect and the /cdn/ GET
  EXPECT_TRUE(fs::exists(q4));

  // Offline: each cached quantization resolves; an absent one is a clear error.
  ResolveOptions offline = options();
  offline.offline = true;
  EXPECT_EQ(resolve_model(std::string(kRepo) + ":Q4_K_M", offline), q4);
  const std::string message =
      error_of([&] { resolve_model(std::string(kRepo) + ":Q8_0", offline); });
  EXPECT_NE(message.find("offline mode"), std::string::npos) << message;
}

TEST_F(HubPullGgufTest, ClearErrors) {
  std::string message = error_of([&] { pull_model({kRepo, "main", "Q5_K_M"}, options()); });
  EXPECT_NE(message.find("no GGUF language model in Q5_K_M"), std::string::npos) << message;
  EXPECT_NE(message.find("tiny-Q4_K_M.gguf"), std::string::npos) << message;
  ResolveOptions opts = options();
  opts.mmproj_quant = "BF16";
  message = error_of([&] { pull_model({kRepo, "main", "Q8_0"}, opts); });
  EXPECT_NE(message.find("no GGUF vision projector (mmproj-*.gguf) in BF16"), std::string::npos)
      << message;
  // A safetensors repository takes no quantization tag.
  hub_.add_repo("qvl-test/tiny-model", kCommit, testing::make_tiny_model_files(1024));
  message = error_of([&] { pull_model({"qvl-test/tiny-model", "main", "Q8_0"}, options()); });
  EXPECT_NE(message.find("is a safetensors repository"), std::string::npos) << message;
  resolve_model("qvl-test/tiny-model", options());  // cached now: the tag is refused all the same
  message = error_of([&] { resolve_model("qvl-test/tiny-model:Q8_0", options()); });
  EXPECT_NE(message.find("is a safetensors repository"), std::string::npos) << message;
  // Neither config.json nor GGUF.
  hub_.add_repo("qvl-test/empty", kCommit, {{"README.md", "x"}});
  message = error_of([&] { pull_model({"qvl-test/empty", "main"}, options()); });
  EXPECT_NE(message.find("no config.json and no GGUF file"), std::string::npos) << message;
}

}  // namespace
}  // namespace qvl::hub
