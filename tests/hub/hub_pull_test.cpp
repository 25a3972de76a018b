// qvl pull against a fake hub on a loopback port: fresh pull, nothing refetched, resume after a
// dropped connection, checksum mismatch, authentication, missing repositories, offline mode.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "hub/blob_download.h"
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

constexpr const char* kRepo = "qvl-test/tiny-model";
constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";
constexpr const char* kShard1 = "model-00001-of-00002.safetensors";
constexpr size_t kShardBytes = 300 * 1024;  // several TCP packets, so a drop lands mid-file

class HubPullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("HF_HUB_OFFLINE");  // the tests decide when to be offline
    files_ = testing::make_tiny_model_files(kShardBytes);
    hub_.add_repo(kRepo, kCommit, files_);
  }

  ResolveOptions options() {
    ResolveOptions opts;
    opts.endpoint = hub_.endpoint();
    opts.cache_dir = cache_dir_.path();
    opts.token = "unused-token";  // keeps any real HF_TOKEN / token file out of the tests
    opts.progress_out = &progress_;
    return opts;
  }

  const FakeFile& file(const std::string& name) const {
    for (const FakeFile& f : files_) {
      if (f.name == name) return f;
    }
    throw std::runtime_error("no file " + name);
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

TEST_F(HubPullTest, FreshPullFetchesOnlyNeededFilesIntoHubLayout) {
  const PullResult result = pull_model({kRepo, "main"}, options());
  const HubCache cache(cache_dir_.path());
  EXPECT_EQ(result.commit, kCommit);
  EXPECT_EQ(result.snapshot_dir, cache.snapshot_dir(kRepo, kCommit));
  EXPECT_EQ(result.files_total, 9);  // 6 metadata files + index + 2 shards
  EXPECT_EQ(result.files_fetched, 9);
  EXPECT_EQ(cache.read_ref(kRepo, "main"), std::optional<std::string>(kCommit));
  for (const FakeFile& f : files_) {
    const bool wanted = f.name != "README.md" && f.name != "onnx/model.onnx" &&
                        f.name != "model-00003-of-00002.safetensors";
    EXPECT_EQ(fs::exists(snapshot_file(f.name)), wanted) << f.name;
    if (!wanted) continue;
    EXPECT_EQ(read_whole_file(snapshot_file(f.name)), f.content) << f.name;
    // Relative symlink into blobs/<etag>, exactly like huggingface_hub.
    ASSERT_TRUE(fs::is_symlink(snapshot_file(f.name)));
    EXPECT_EQ(fs::read_symlink(snapshot_file(f.name)).string(),
              "../../blobs/" + FakeHub::etag_of(f));
  }
  EXPECT_FALSE(fs::exists(cache.incomplete_blob_path(kRepo, FakeHub::etag_of(file(kShard1)))));
  EXPECT_NE(progress_.str().find(kShard1), std::string::npos);
}

TEST_F(HubPullTest, SecondPullDownloadsNothing) {
  pull_model({kRepo, "main"}, options());
  hub_.clear_requests();
  const PullResult again = pull_model({kRepo, "main"}, options());
  EXPECT_EQ(again.files_fetched, 0);
  EXPECT_EQ(again.bytes_fetched, 0);
  EXPECT_EQ(hub_.content_requests(), 0);
  EXPECT_EQ(hub_.requests().size(), 1u);  // just the revision lookup
}

TEST_F(HubPullTest, ResolveUsesCompleteCacheWithoutAnyRequest) {
  const std::string first = resolve_model(kRepo, options());
  hub_.clear_requests();
  EXPECT_EQ(resolve_model(kRepo, options()), first);
  EXPECT_EQ(resolve_model(std::string(kRepo) + "@" + kCommit, options()), first);
  EXPECT_TRUE(hub_.requests().empty());
}

TEST_F(HubPullTest, DroppedConnectionIsResumedWithRangeRequest) {
  hub_.drop_connection_once(kShard1);
  const PullResult result = pull_model({kRepo, "main"}, options());
  EXPECT_EQ(read_whole_file(snapshot_file(kShard1)), file(kShard1).content);
  int cdn_gets = 0;
  std::string range;
  for (const testing::FakeRequest& request : hub_.requests()) {
    if (request.path == "/cdn/" + FakeHub::etag_of(file(kShard1))) {
      ++cdn_gets;
      range = request.range;
    }
  }
  EXPECT_EQ(cdn_gets, 2);
  EXPECT_EQ(range, "bytes=" + std::to_string(kShardBytes / 2) + "-");
  int64_t wanted_bytes = 2 * kShardBytes;  // each byte of the dropped shard fetched once
  for (const FakeFile& f : files_) {
    if (!f.lfs && f.name != "README.md") wanted_bytes += static_cast<int64_t>(f.content.size());
  }
  EXPECT_EQ(result.bytes_fetched, wanted_bytes);
}

TEST_F(HubPullTest, InterruptedPullResumesOnTheNextRun) {
  hub_.drop_connection_once(kShard1);
  ResolveOptions once = options();
  once.max_attempts = 1;
  EXPECT_NE(error_of([&] {
              pull_model({kRepo, "main"}, once);
            }).find("run the command again"),
            std::string::npos);
  const HubCache cache(cache_dir_.path());
  const std::string etag = FakeHub::etag_of(file(kShard1));
  // Nothing that looks complete: only the .incomplete blob with the first half.
  EXPECT_FALSE(fs::exists(snapshot_file(kShard1)));
  EXPECT_FALSE(fs::exists(cache.blob_path(kRepo, etag)));
  EXPECT_EQ(fs::file_size(cache.incomplete_blob_path(kRepo, etag)), kShardBytes / 2);
  EXPECT_FALSE(cache.read_ref(kRepo, "main").has_value());

  hub_.clear_requests();
  pull_model({kRepo, "main"}, once);
  EXPECT_EQ(read_whole_file(snapshot_file(kShard1)), file(kShard1).content);
  bool resumed = false;
  for (const testing::FakeRequest& request : hub_.requests()) {
    if (request.path == "/cdn/" + etag) {
      EXPECT_EQ(request.range, "bytes=" + std::to_string(kShardBytes / 2) + "-");
      resumed = true;
    }
  }
  EXPECT_TRUE(resumed);
}

TEST_F(HubPullTest, ChecksumMismatchFailsAndLeavesNoCompleteFile) {
  hub_.advertise_wrong_sha256(kShard1);
  const std::string message = error_of([&] { pull_model({kRepo, "main"}, options()); });
  EXPECT_NE(message.find("checksum mismatch"), std::string::npos) << message;
  EXPECT_NE(message.find(kShard1), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(snapshot_file(kShard1)));
  const HubCache cache(cache_dir_.path());
  for (const auto& entry : fs::directory_iterator(cache.repo_dir(kRepo) + "/blobs")) {
    EXPECT_EQ(
        fs::file_size(entry.path()) == kShardBytes && entry.path().extension() != ".incomplete",
        entry.path().filename() == FakeHub::etag_of(file("model-00002-of-00002.safetensors")))
        << entry.path();
  }
}

TEST_F(HubPullTest, PrivateRepoNeedsToken) {
  hub_.require_token("hf_secret");
  ResolveOptions opts = options();
  opts.token.clear();
  setenv("HF_TOKEN_PATH", (cache_dir_.path() + "/no-token-here").c_str(), 1);
  unsetenv("HF_TOKEN");
  const std::string message = error_of([&] { pull_model({kRepo, "main"}, opts); });
  unsetenv("HF_TOKEN_PATH");
  EXPECT_NE(message.find("HTTP 401"), std::string::npos) << message;
  EXPECT_NE(message.find("HF_TOKEN"), std::string::npos) << message;
  EXPECT_NE(message.find("no token was sent"), std::string::npos) << message;

  opts.token = "hf_wrong";
  EXPECT_NE(error_of([&] {
              pull_model({kRepo, "main"}, opts);
            }).find("token was rejected"),
            std::string::npos);

  opts.token = "hf_secret";
  pull_model({kRepo, "main"}, opts);
  EXPECT_EQ(read_whole_file(snapshot_file(kShard1)), file(kShard1).content);
}

TEST_F(HubPullTest, TokenIsReadFromTokenFile) {
  hub_.require_token("hf_from_file");
  testing::write_whole_file(cache_dir_.path() + "/token", "hf_from_file\n");
  setenv("HF_TOKEN_PATH", (cache_dir_.path() + "/token").c_str(), 1);
  unsetenv("HF_TOKEN");
  ResolveOptions opts = options();
  opts.token.clear();
  EXPECT_EQ(error_of([&] { pull_model({kRepo, "main"}, opts); }), "(no error)");
  unsetenv("HF_TOKEN_PATH");
}

TEST_F(HubPullTest, MissingRepoRevisionAndServerAreClearErrors) {
  std::string message = error_of([&] { pull_model({"qvl-test/nope", "main"}, options()); });
  EXPECT_NE(message.find("repository qvl-test/nope not found"), std::string::npos) << message;
  message = error_of([&] { pull_model({kRepo, "v9"}, options()); });
  EXPECT_NE(message.find("revision 'v9' not found"), std::string::npos) << message;

  ResolveOptions unreachable = options();
  unreachable.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  message = error_of([&] { pull_model({kRepo, "main"}, unreachable); });
  EXPECT_NE(message.find("cannot reach the Hugging Face hub"), std::string::npos) << message;
  EXPECT_NE(message.find("--offline"), std::string::npos) << message;
}

TEST_F(HubPullTest, ListingWithoutMetadataFallsBackToHeadRequests) {
  hub_.omit_file_metadata(true);
  pull_model({kRepo, "main"}, options());
  EXPECT_EQ(read_whole_file(snapshot_file(kShard1)), file(kShard1).content);
  EXPECT_EQ(fs::read_symlink(snapshot_file(kShard1)).string(),
            "../../blobs/" + FakeHub::etag_of(file(kShard1)));
  int heads = 0;
  for (const testing::FakeRequest& request : hub_.requests()) heads += request.method == "HEAD";
  EXPECT_EQ(heads, 9);
}

TEST_F(HubPullTest, RenamedRepositoryIsFollowedOnTheSameHost) {
  hub_.rename_repo("qvl-test/old-name", kRepo);
  hub_.omit_file_metadata(true);  // exercises the HEAD path as well as the API redirect
  const PullResult result = pull_model({"qvl-test/old-name", "main"}, options());
  const HubCache cache(cache_dir_.path());
  EXPECT_EQ(result.snapshot_dir, cache.snapshot_dir("qvl-test/old-name", kCommit));
  EXPECT_EQ(read_whole_file(result.snapshot_dir + "/" + kShard1), file(kShard1).content);
}

TEST_F(HubPullTest, OfflineUsesCompleteCacheAndExplainsIncompleteOne) {
  ResolveOptions offline = options();
  offline.offline = true;
  std::string message = error_of([&] { resolve_model(kRepo, offline); });
  EXPECT_NE(message.find("offline mode"), std::string::npos) << message;
  EXPECT_NE(message.find("qvl pull " + std::string(kRepo)), std::string::npos) << message;

  const std::string snapshot = resolve_model(kRepo, options());
  hub_.clear_requests();
  EXPECT_EQ(resolve_model(kRepo, offline), snapshot);
  EXPECT_NE(error_of([&] {
              pull_model({kRepo, "main"}, offline);
            }).find("offline"),
            std::string::npos);

  fs::remove(snapshot_file("model-00002-of-00002.safetensors"));
  message = error_of([&] { resolve_model(kRepo, offline); });
  EXPECT_NE(message.find("incomplete"), std::string::npos) << message;
  EXPECT_NE(message.find("model-00002-of-00002.safetensors"), std::string::npos) << message;
  EXPECT_TRUE(hub_.requests().empty());

  // Online, the missing link is restored from the blob that is still there: no download.
  EXPECT_EQ(resolve_model(kRepo, options()), snapshot);
  EXPECT_EQ(hub_.content_requests(), 0);
  EXPECT_TRUE(fs::exists(snapshot_file("model-00002-of-00002.safetensors")));
}

TEST_F(HubPullTest, ConcurrentPullsShareTheCacheSafely) {
  std::vector<std::string> errors(3);
  std::vector<PullResult> results(3);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < errors.size(); ++i) {
    threads.emplace_back([&, i] {
      ResolveOptions opts = options();
      opts.show_progress = false;
      errors[i] = error_of([&] { results[i] = pull_model({kRepo, "main"}, opts); });
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& error : errors) EXPECT_EQ(error, "(no error)");
  EXPECT_EQ(results[0].files_fetched + results[1].files_fetched + results[2].files_fetched, 9);
  EXPECT_EQ(read_whole_file(snapshot_file(kShard1)), file(kShard1).content);
  // Each blob was fetched once: the per-blob lock makes the others find it finished.
  int shard_gets = 0;
  for (const testing::FakeRequest& request : hub_.requests()) {
    shard_gets += request.path == "/cdn/" + FakeHub::etag_of(file(kShard1));
  }
  EXPECT_EQ(shard_gets, 1);
}

TEST(HubDiskSpace, RefusesDownloadsLargerThanFreeSpace) {
  testing::TempDir dir;
  try {
    check_free_space(dir.path(), int64_t{1} << 60);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kResourceExhausted);
    EXPECT_NE(std::string(error.what()).find("not enough disk space"), std::string::npos);
  }
  EXPECT_NO_THROW(check_free_space(dir.path(), 1));
}

}  // namespace
}  // namespace qvl::hub
