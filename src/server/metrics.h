// Prometheus metrics for /metrics (text exposition format 0.0.4). Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "qvl/engine.h"

namespace qvl::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // Appends the _bucket, _sum and _count lines (caller holds the registry lock).
  void render(const std::string& name, std::string& out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Values read at scrape time from their owners.
struct LiveGauges {
  int64_t queue_depth = 0;
  int64_t active_requests = 0;
  bool model_ready = false;
  const EngineStats* engine = nullptr;  // caches and scheduler, once the model is loaded
};

class Metrics {
 public:
  Metrics();

  void count_request(const std::string& endpoint, int status);
  void add_tokens(int64_t prompt_tokens, int64_t completion_tokens, int64_t image_tokens,
                  int64_t video_tokens = 0);
  // Speculative decoding: draft tokens verified, and accepted.
  void add_drafts(int64_t drafted, int64_t accepted);
  void observe_time_to_first_token(double seconds);
  void observe_request_latency(double seconds);
  void observe_image_encode(double seconds);

  std::string render(const LiveGauges& gauges);

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0;
  uint64_t completion_tokens_ = 0;
  uint64_t image_tokens_ = 0;
  uint64_t video_tokens_ = 0;
  uint64_t draft_tokens_ = 0, draft_accepted_tokens_ = 0;
  Histogram ttft_;
  Histogram latency_;
  Histogram image_encode_;
  // For CPU utilisation between two scrapes.
  std::chrono::steady_clock::time_point last_scrape_;
  double last_cpu_seconds_ = 0;
};

// Process CPU time (user + system) in seconds and resident memory in bytes.
double process_cpu_seconds();
uint64_t process_resident_bytes();

}  // namespace qvl::server
