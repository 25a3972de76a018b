// The on-disk cache: a folder laid out by hand the way huggingface_hub writes it must resolve
// without any network request, and our own writes must follow the same layout.
#include "hub/hub_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "base/error.h"
#include "hub/fake_hub.h"
#include "hub/model_files.h"
#include "hub/model_pull.h"
#include "hub/temp_dir.h"

namespace qvl::hub {
namespace {
namespace fs = std::filesystem;
using testing::write_whole_file;

constexpr const char* kCommit = "fedcba9876543210fedcba9876543210fedcba98";
constexpr const char* kPrCommit = "1111111111111111111111111111111111111111";

// Writes blobs/<etag> and a relative symlink to it, the way Python does.
void add_python_file(const std::string& repo_dir, const std::string& commit,
                     const std::string& name, const std::string& etag, const std::string& content) {
  write_whole_file(repo_dir + "/blobs/" + etag, content);
  const fs::path link = fs::path(repo_dir) / "snapshots" / commit / name;
  fs::create_directories(link.parent_path());
  fs::create_symlink(fs::relative(fs::path(repo_dir) / "blobs" / etag, link.parent_path()), link);
}

class HubCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("HF_HUB_OFFLINE");
    repo_dir_ = cache_dir_.path() + "/models--Acme--Vision-2B";
    add_python_file(repo_dir_, kCommit, "config.json", std::string(40, 'a'), "{}");
    add_python_file(repo_dir_, kCommit, "tokenizer.json", std::string(40, 'b'), "{\"v\":1}");
    add_python_file(repo_dir_, kCommit, "model.safetensors", std::string(64, 'c'), "weights");
    write_whole_file(repo_dir_ + "/refs/main", std::string(kCommit) + "\n");
    // A pull-request ref lives in a nested refs/ folder.
    add_python_file(repo_dir_, kPrCommit, "config.json", std::string(40, 'a'), "{}");
    write_whole_file(repo_dir_ + "/refs/refs/pr/1", kPrCommit);
  }

  ResolveOptions options() const {
    ResolveOptions opts;
    opts.endpoint = hub_.endpoint();
    opts.cache_dir = cache_dir_.path();
    opts.token = "unused";
    return opts;
  }

  testing::FakeHub hub_;  // holds no repositories: any request would fail
  testing::TempDir cache_dir_;
  std::string repo_dir_;
};

TEST_F(HubCacheTest, PythonLayoutResolvesWithoutRequests) {
  const std::string snapshot = repo_dir_ + "/snapshots/" + kCommit;
  EXPECT_EQ(resolve_model("Acme/Vision-2B", options()), snapshot);
  EXPECT_EQ(resolve_model("Acme/Vision-2B@main", options()), snapshot);
  EXPECT_EQ(resolve_model(std::string("Acme/Vision-2B@") + kCommit, options()), snapshot);
  EXPECT_TRUE(hub_.requests().empty());
  EXPECT_EQ(testing::read_whole_file(snapshot + "/model.safetensors"), "weights");
}

TEST_F(HubCacheTest, ReadsRefsIncludingNestedOnes) {
  const HubCache cache(cache_dir_.path());
  EXPECT_EQ(cache.read_ref("Acme/Vision-2B", "main"), std::optional<std::string>(kCommit));
  EXPECT_EQ(cache.read_ref("Acme/Vision-2B", "refs/pr/1"), std::optional<std::string>(kPrCommit));
  EXPECT_FALSE(cache.read_ref("Acme/Vision-2B", "v2").has_value());
  EXPECT_EQ(cache.local_commit("Acme/Vision-2B", kPrCommit), std::optional<std::string>(kPrCommit));
  write_whole_file(repo_dir_ + "/refs/broken", "not-a-sha");
  EXPECT_FALSE(cache.read_ref("Acme/Vision-2B", "broken").has_value());
}

TEST_F(HubCacheTest, OfflineIncompleteSnapshotNamesWhatIsMissing) {
  ResolveOptions offline = options();
  offline.offline = true;
  try {
    resolve_model("Acme/Vision-2B@refs/pr/1", offline);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("incomplete"), std::string::npos) << message;
    EXPECT_NE(message.find("tokenizer.json"), std::string::npos) << message;
    EXPECT_NE(message.find("model.safetensors"), std::string::npos) << message;
  }
  EXPECT_THROW(resolve_model("Acme/Other", offline), Error);
  EXPECT_TRUE(hub_.requests().empty());
}

TEST_F(HubCacheTest, EnvironmentOfflineFlagIsHonoured) {
  setenv("HF_HUB_OFFLINE", "1", 1);
  EXPECT_THROW(pull_model({"Acme/Vision-2B", "main"}, options()), Error);
  EXPECT_EQ(resolve_model("Acme/Vision-2B", options()), repo_dir_ + "/snapshots/" + kCommit);
  unsetenv("HF_HUB_OFFLINE");
  EXPECT_TRUE(hub_.requests().empty());
}

TEST_F(HubCacheTest, BrokenSymlinkCountsAsMissing) {
  fs::remove(repo_dir_ + "/blobs/" + std::string(64, 'c'));
  EXPECT_EQ(missing_model_files(repo_dir_ + "/snapshots/" + kCommit),
            std::vector<std::string>{"model.safetensors (or model.safetensors.index.json)"});
}

TEST_F(HubCacheTest, ShardedSnapshotNeedsEveryShard) {
  const std::string snapshot = cache_dir_.path() + "/sharded";
  write_whole_file(snapshot + "/config.json", "{}");
  write_whole_file(snapshot + "/tokenizer.json", "{}");
  write_whole_file(snapshot + "/model.safetensors.index.json",
                   R"({"weight_map": {"a": "m-1.safetensors", "b": "m-2.safetensors",
                                      "c": "m-1.safetensors"}})");
  write_whole_file(snapshot + "/m-1.safetensors", "x");
  EXPECT_EQ(missing_model_files(snapshot), std::vector<std::string>{"m-2.safetensors"});
  write_whole_file(snapshot + "/m-2.safetensors", "y");
  EXPECT_TRUE(missing_model_files(snapshot).empty());
}

TEST_F(HubCacheTest, LinksAreRelativeAndAtomicallyReplaced) {
  const HubCache cache(cache_dir_.path());
  cache.link_snapshot_file("Acme/Vision-2B", kCommit, "sub/dir/file.json", "e1");
  const std::string link = cache.snapshot_file("Acme/Vision-2B", kCommit, "sub/dir/file.json");
  EXPECT_EQ(fs::read_symlink(link).string(), "../../../../blobs/e1");
  cache.link_snapshot_file("Acme/Vision-2B", kCommit, "sub/dir/file.json", "e2");
  EXPECT_EQ(fs::read_symlink(link).string(), "../../../../blobs/e2");
  for (const auto& entry : fs::directory_iterator(fs::path(link).parent_path())) {
    EXPECT_EQ(entry.path().filename(), "file.json");  // no temporary left behind
  }
  EXPECT_THROW(cache.link_snapshot_file("Acme/Vision-2B", kCommit, "../escape", "e"), Error);
}

TEST_F(HubCacheTest, WriteRefSkipsCommitsAndNestsBranchNames) {
  const HubCache cache(cache_dir_.path());
  cache.write_ref("Acme/New", "feature/x", kCommit);
  EXPECT_EQ(testing::read_whole_file(cache.repo_dir("Acme/New") + "/refs/feature/x"), kCommit);
  cache.write_ref("Acme/New", kCommit, kCommit);
  EXPECT_FALSE(fs::exists(cache.repo_dir("Acme/New") + "/refs/" + kCommit));
}

TEST_F(HubCacheTest, LocalPathsAreReturnedAsIs) {
  EXPECT_EQ(resolve_model(repo_dir_, options()), repo_dir_);
  const std::string packed = cache_dir_.path() + "/model.qvl";
  write_whole_file(packed, "packed");
  EXPECT_EQ(resolve_model(packed, options()), packed);
  try {
    resolve_model(cache_dir_.path() + "/does/not/exist", options());
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(error.what()).find("Org/Name[@revision]"), std::string::npos);
  }
  EXPECT_TRUE(hub_.requests().empty());
}

}  // namespace
}  // namespace qvl::hub
