#include "hub/hub_client.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "hub/http_client.h"
#include "hub/hub_errors.h"

namespace qvl::hub {
namespace {

// Blob names become file names in the cache: accept only what etags look like.
bool is_plausible_etag(const std::string& etag) {
  if (etag.empty() || etag.size() > 128) return false;
  for (char c : etag) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

int64_t parse_size(const std::string& text) {
  if (text.empty() || text.size() > 18) return -1;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

// "https://host:port/some/prefix" -> "https://host:port" (where absolute paths are resolved).
std::string origin_of(const std::string& url) {
  const size_t scheme_end = url.find("://");
  const size_t path_start = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  return url.substr(0, path_start);
}

RepoFile parse_sibling(const nlohmann::json& sibling) {
  RepoFile file;
  file.name = sibling.value("rfilename", "");
  if (sibling.contains("size") && sibling["size"].is_number_integer()) {
    file.size = sibling["size"].get<int64_t>();
  }
  if (sibling.contains("blobId") && sibling["blobId"].is_string()) {
    file.etag = sibling["blobId"].get<std::string>();
  }
  if (sibling.contains("lfs") && sibling["lfs"].is_object()) {
    const auto& lfs = sibling["lfs"];
    for (const char* key : {"sha256", "oid"}) {
      if (lfs.contains(key) && lfs[key].is_string()) file.sha256 = lfs[key].get<std::string>();
    }
    if (lfs.contains("size") && lfs["size"].is_number_integer()) {
      file.size = lfs["size"].get<int64_t>();
    }
    file.etag = file.sha256;
  }
  if (!is_plausible_etag(file.etag)) file.etag.clear();
  if (!file.sha256.empty() && (file.sha256.size() != 64 || !is_plausible_etag(file.sha256))) {
    file.sha256.clear();
    file.etag.clear();
  }
  if (file.size < 0) file.size = -1;
  return file;
}

}  // namespace

const RepoFile* RepoInfo::find(const std::string& name) const {
  for (const RepoFile& file : files) {
    if (file.name == name) return &file;
  }
  return nullptr;
}

std::string normalize_etag(const std::string& etag) {
  std::string value = etag;
  if (value.rfind("W/", 0) == 0) value = value.substr(2);
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    value = value.substr(1, value.size() - 2);
  }
  return value;
}

std::string HubClient::file_url(const std::string& repo, const std::string& revision,
                                const std::string& file) const {
  return endpoint_ + "/" + repo + "/resolve/" + url_encode(revision, false) + "/" +
         url_encode(file, true);
}

RepoInfo HubClient::repo_info(const HubModelId& id) const {
  HttpRequest request;
  request.url = endpoint_ + "/api/models/" + id.repo + "/revision/" +
                url_encode(id.revision, false) + "?blobs=true";
  request.bearer_token = token_;
  const HttpResponse response = http_request(request);
  const HubRequestContext context{endpoint_, id.repo, id.revision, "", !token_.empty()};
  check_hub_response(response, context);

  const auto json = nlohmann::json::parse(response.body, nullptr, false);
  if (!json.is_object() || !json.contains("sha") || !json["sha"].is_string() ||
      !is_commit_hash(json["sha"].get<std::string>())) {
    fail(ErrorCode::kCorrupt,
         "unexpected answer from " + request.url + ": no commit sha in the repository info");
  }
  RepoInfo info;
  info.commit = json["sha"].get<std::string>();
  if (json.contains("siblings") && json["siblings"].is_array()) {
    for (const auto& sibling : json["siblings"]) {
      if (!sibling.is_object()) continue;
      RepoFile file = parse_sibling(sibling);
      if (is_safe_repo_path(file.name)) info.files.push_back(std::move(file));
    }
  }
  return info;
}

RepoFile HubClient::file_metadata(const std::string& repo, const std::string& commit,
                                  const std::string& file) const {
  HttpRequest request;
  request.method = "HEAD";
  request.url = file_url(repo, commit, file);
  request.bearer_token = token_;
  request.follow_redirects = false;  // the CDN redirect carries no X-Linked-* headers
  HttpResponse response = http_request(request);
  const HubRequestContext context{endpoint_, repo, commit, file, !token_.empty()};
  check_hub_response(response, context);
  // Like huggingface_hub, follow only same-host (relative) redirects, e.g. a renamed repository.
  for (int hops = 0;
       hops < 5 && response.status >= 300 && response.status < 400 &&
       response.header("x-linked-etag").empty() && response.header("location").rfind("/", 0) == 0;
       ++hops) {
    request.url = origin_of(endpoint_) + response.header("location");
    response = http_request(request);
    check_hub_response(response, context);
  }
  const std::string served_commit = response.header("x-repo-commit");
  if (!served_commit.empty() && served_commit != commit) {
    fail(ErrorCode::kCorrupt,
         "the hub served " + file + " from commit " + served_commit + " instead of " + commit);
  }

  RepoFile metadata;
  metadata.name = file;
  const std::string linked_etag = normalize_etag(response.header("x-linked-etag"));
  if (!linked_etag.empty()) {
    metadata.etag = linked_etag;
    metadata.sha256 = linked_etag.size() == 64 ? linked_etag : "";
    metadata.size = parse_size(response.header("x-linked-size"));
  } else {
    metadata.etag = normalize_etag(response.header("etag"));
    metadata.size = parse_size(response.header("content-length"));
  }
  if (!is_plausible_etag(metadata.etag)) {
    fail(ErrorCode::kCorrupt, "the hub gave no usable ETag for " + file + " in " + repo);
  }
  return metadata;
}

}  // namespace qvl::hub
