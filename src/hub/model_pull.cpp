#include "hub/model_pull.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/log.h"
#include "hub/blob_download.h"
#include "hub/download_progress.h"
#include "hub/gguf_choice.h"
#include "hub/hub_cache.h"
#include "hub/hub_client.h"
#include "hub/hub_env.h"
#include "hub/model_files.h"

namespace qvl::hub {
namespace fs = std::filesystem;

namespace {

std::string short_commit(const std::string& commit) {
  return commit.substr(0, 10);
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::kIo, "cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A quantization tag names a file of a GGUF repository; a safetensors one is quantized at load.
std::string quant_of_safetensors(const HubModelId& id) {
  return id.repo + " is a safetensors repository; a :" + id.quant +
         " quantization picks a file of a GGUF repository (use --quant with qvl run)";
}

// One pull: the hub's listing plus the cache it fills.
class Puller {
 public:
  Puller(const HubModelId& id, const ResolveOptions& options)
      : id_(id),
        options_(options),
        cache_(options.cache_dir),
        client_(options.endpoint, options.token),
        progress_(options.progress_out ? *options.progress_out : std::cerr, options.show_progress,
                  options.progress_bar) {}

  PullResult run() {
    info_ = client_.repo_info(id_);
    result_.commit = info_.commit;
    result_.snapshot_dir = cache_.snapshot_dir(id_.repo, info_.commit);
    result_.model_path = result_.snapshot_dir;
    if (!info_.find("config.json")) {
      std::vector<std::string> names;
      for (const RepoFile& f : info_.files) names.push_back(f.name);
      if (std::any_of(names.begin(), names.end(), is_gguf_name)) return run_gguf(names);
      fail(ErrorCode::kUnsupported, id_.repo + "@" + id_.revision +
                                        " has no config.json and no GGUF file: not a model qvl "
                                        "can load");
    }
    if (!id_.quant.empty()) fail(ErrorCode::kInvalidArgument, quant_of_safetensors(id_));
    std::vector<std::string> wanted;
    for (const std::string& name : model_metadata_files()) {
      if (info_.find(name)) wanted.push_back(name);
    }
    std::vector<RepoFile> files;
    if (info_.find(kWeightsIndexFile)) {
      // The shard list lives in the index, so the index is fetched first, on its own.
      files = metadata_for({kWeightsIndexFile});
      fetch_and_link(files, false);
      const std::string index =
          read_file(cache_.snapshot_file(id_.repo, info_.commit, kWeightsIndexFile));
      for (const std::string& shard : shards_from_index(index)) {
        if (!info_.find(shard)) {
          fail(ErrorCode::kCorrupt, std::string(kWeightsIndexFile) + " of " + id_.repo + " lists " +
                                        shard + ", which the repository lacks");
        }
        wanted.push_back(shard);
      }
    } else if (info_.find(kWeightsFile)) {
      wanted.push_back(kWeightsFile);
    } else {
      fail(ErrorCode::kUnsupported, id_.repo + "@" + id_.revision + " has neither " + kWeightsFile +
                                        " nor " + kWeightsIndexFile);
    }
    const std::vector<RepoFile> rest = metadata_for(wanted);
    files.insert(files.end(), rest.begin(), rest.end());
    fetch_and_link(files, true);
    cache_.write_ref(id_.repo, id_.revision, info_.commit);
    result_.files_total = static_cast<int>(files.size());
    return result_;
  }

 private:
  std::vector<RepoFile> metadata_for(const std::vector<std::string>& names) const {
    std::vector<RepoFile> files;
    for (const std::string& name : names) {
      const RepoFile* listed = info_.find(name);
      if (listed && !listed->etag.empty() && listed->size >= 0) {
        files.push_back(*listed);
      } else {  // the listing lacks per-file metadata: ask for this file's headers
        files.push_back(client_.file_metadata(id_.repo, info_.commit, name));
      }
    }
    return files;
  }

  // Only the chosen pair is fetched: a GGUF repository holds every quantization.
  PullResult run_gguf(const std::vector<std::string>& names) {
    const GgufChoice choice =
        choose_gguf_pair(names, id_.quant, options_.mmproj_quant, id_.repo + "@" + id_.revision);
    const std::vector<RepoFile> files = metadata_for({choice.text, choice.mmproj});
    fetch_and_link(files, true);
    cache_.write_ref(id_.repo, id_.revision, info_.commit);
    result_.files_total = static_cast<int>(files.size());
    result_.model_path = cache_.snapshot_file(id_.repo, info_.commit, choice.text);
    result_.mmproj_path = cache_.snapshot_file(id_.repo, info_.commit, choice.mmproj);
    return result_;
  }

  bool is_cached(const RepoFile& file) const {
    return cache_.has_blob(id_.repo, file.etag, file.size);
  }

  // Downloads what is missing among `files` (skipping those already done), then links them all.
  // With `numbered`, progress labels count the downloads: [1/3], [2/3]...
  void fetch_and_link(const std::vector<RepoFile>& files, bool numbered) {
    int64_t bytes_needed = 0;
    int missing = 0;
    for (const RepoFile& file : files) {
      if (done_.count(file.name) || is_cached(file)) continue;
      ++missing;
      if (file.size > 0) bytes_needed += file.size - static_cast<int64_t>(partial_size(file));
    }
    if (missing > 0) {
      if (!announced_) {
        progress_.message("pulling " + id_.repo + "@" + id_.revision + " (commit " +
                          short_commit(info_.commit) + ") from " + client_.endpoint());
        announced_ = true;
      }
      if (numbered) {
        progress_.message("  " + std::to_string(missing) + " of " + std::to_string(files.size()) +
                          " files to download (" +
                          DownloadProgress::format_bytes(static_cast<double>(bytes_needed)) + ")");
      }
      const std::string blobs = cache_.repo_dir(id_.repo) + "/blobs";
      std::error_code ec;
      fs::create_directories(blobs, ec);
      check_free_space(blobs, bytes_needed);
    }
    int index = 0;
    for (const RepoFile& file : files) {
      if (done_.count(file.name)) continue;
      if (!is_cached(file)) download(file, ++index, numbered ? missing : 0);
      cache_.link_snapshot_file(id_.repo, info_.commit, file.name, file.etag);
      done_.insert(file.name);
    }
  }

  uintmax_t partial_size(const RepoFile& file) const {
    std::error_code ec;
    const auto size = fs::file_size(cache_.incomplete_blob_path(id_.repo, file.etag), ec);
    return ec ? 0 : size;
  }

  void download(const RepoFile& file, int index, int count) {
    BlobDownload job;
    job.url = client_.file_url(id_.repo, info_.commit, file.name);
    job.bearer_token = client_.token();
    job.blob_path = cache_.blob_path(id_.repo, file.etag);
    job.lock_path = cache_.lock_path(id_.repo, file.etag);
    job.expected_size = file.size;
    job.expected_sha256 = file.sha256;
    job.max_attempts = std::max(1, options_.max_attempts);
    job.context = HubRequestContext{client_.endpoint(), id_.repo, id_.revision, file.name,
                                    !client_.token().empty()};
    BlobProgress callbacks;
    bool started = false;
    callbacks.on_start = [&](int64_t resumed_from) {
      if (started && resumed_from == 0) return;
      started = true;
      progress_.begin_file(file.name, index, count, file.size, resumed_from);
    };
    callbacks.on_bytes = [&](int64_t done) { progress_.update(done); };
    const BlobResult blob = download_blob(job, callbacks);
    if (started) progress_.end_file();
    result_.bytes_fetched += blob.bytes_fetched;
    result_.files_fetched += blob.downloaded ? 1 : 0;
  }

  HubModelId id_;
  ResolveOptions options_;
  HubCache cache_;
  HubClient client_;
  DownloadProgress progress_;
  RepoInfo info_;
  PullResult result_;
  std::set<std::string> done_;
  bool announced_ = false;
};

}  // namespace

ResolveOptions with_environment_defaults(ResolveOptions options) {
  if (options.endpoint.empty()) options.endpoint = endpoint_from_env();
  while (!options.endpoint.empty() && options.endpoint.back() == '/') options.endpoint.pop_back();
  if (options.cache_dir.empty()) options.cache_dir = cache_dir_from_env();
  if (options.token.empty()) options.token = token_from_env();
  options.offline = options.offline || offline_from_env();
  if (!options.progress_out) options.progress_bar = stderr_is_terminal();
  return options;
}

PullResult pull_model(const HubModelId& id, const ResolveOptions& raw_options) {
  const ResolveOptions options = with_environment_defaults(raw_options);
  if (options.offline) {
    fail(ErrorCode::kInvalidArgument, "cannot pull " + id.repo +
                                          " in offline mode (--offline or "
                                          "HF_HUB_OFFLINE=1); unset it to download");
  }
  return Puller(id, options).run();
}

namespace {

// The pair a cached GGUF snapshot (no config.json) holds for `id`, when it holds one.
std::optional<GgufChoice> cached_gguf_pair(const std::string& snapshot, const HubModelId& id,
                                           const ResolveOptions& options) {
  std::error_code ec;
  if (fs::exists(fs::path(snapshot) / "config.json", ec)) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(snapshot, ec)) {
    if (is_gguf_name(entry.path().filename().string()) && fs::is_regular_file(entry.path(), ec)) {
      names.push_back(entry.path().filename().string());
    }
  }
  if (names.empty()) return std::nullopt;
  try {
    return choose_gguf_pair(names, id.quant, options.mmproj_quant, snapshot);
  } catch (const Error&) {
    return std::nullopt;  // not this quantization (or not unambiguously): ask the hub
  }
}

}  // namespace

std::string resolve_model(const std::string& spec, const ResolveOptions& raw_options,
                          std::string* mmproj) {
  std::error_code ec;
  if (!spec.empty() && fs::exists(spec, ec)) return spec;
  const auto id = parse_hub_model_id(spec);
  if (!id) {
    fail(ErrorCode::kNotFound, "model '" + spec +
                                   "' is neither an existing local file or folder "
                                   "nor a hub id of the form Org/Name[@revision]");
  }
  const ResolveOptions options = with_environment_defaults(raw_options);
  const HubCache cache(options.cache_dir);
  std::vector<std::string> missing;
  if (const auto commit = cache.local_commit(id->repo, id->revision)) {
    const std::string snapshot = cache.snapshot_dir(id->repo, *commit);
    if (const auto pair = cached_gguf_pair(snapshot, *id, options)) {
      QVL_LOG(kDebug) << "using cached " << spec << ": " << pair->text << " + " << pair->mmproj;
      if (mmproj) *mmproj = snapshot + "/" + pair->mmproj;
      return snapshot + "/" + pair->text;
    }
    missing = missing_model_files(snapshot);
    if (missing.empty()) {
      if (!id->quant.empty()) fail(ErrorCode::kInvalidArgument, quant_of_safetensors(*id));
      QVL_LOG(kDebug) << "using cached " << spec << " at " << snapshot;
      return snapshot;
    }
  }
  if (options.offline) {
    const std::string where = " in the cache at " + cache.repo_dir(id->repo);
    if (missing.empty()) {
      fail(ErrorCode::kNotFound, "offline mode: " + spec + " is not" + where + ". Run `qvl pull " +
                                     spec + "` while online first.");
    }
    fail(ErrorCode::kNotFound, "offline mode: the cached copy of " + spec + where +
                                   " is incomplete (missing " + join(missing) +
                                   "). Run `qvl pull " + spec + "` while online to complete it.");
  }
  const PullResult pulled = pull_model(*id, options);
  if (mmproj && !pulled.mmproj_path.empty()) *mmproj = pulled.mmproj_path;
  return pulled.model_path;
}

}  // namespace qvl::hub
