#include "server/metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace qvl::server {
namespace {

std::string number(double value) {
  std::ostringstream out;
  out.precision(10);
  out << value;
  return out.str();
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const std::string& name, double value) {
  out += name + " " + number(value) + "\n";
}

const std::vector<double> kLatencyBuckets = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
const std::vector<double> kFastBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                          1,     2.5,  5,     10,   30,  60};

// A metric with one sample: its HELP/TYPE header and value.
void metric(std::string& out, const std::string& name, const char* type, const char* help,
            double value) {
  header(out, name, type, help);
  sample(out, name, value);
}

// _bucket (cumulative), _sum and _count lines from per-bucket counts (the last is +Inf).
void render_buckets(std::string& out, const std::string& name, const std::vector<double>& bounds,
                    const std::vector<uint64_t>& counts, double sum) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds.size() && i < counts.size(); ++i) {
    cumulative += counts[i];
    out += name + "_bucket{le=\"" + number(bounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  if (counts.size() > bounds.size()) cumulative += counts[bounds.size()];
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  out += name + "_sum " + number(sum) + "\n";
  out += name + "_count " + std::to_string(cumulative) + "\n";
}

void render_engine(std::string& out, const EngineStats& e) {
  const auto d = [](auto v) { return static_cast<double>(v); };
  metric(out, "qvl_prefix_cache_hit_tokens_total", "counter",
         "Prompt positions whose keys/values came from the prefix cache instead of being computed.",
         d(e.prefix_hit_tokens));
  metric(out, "qvl_prefix_cache_lookup_tokens_total", "counter",
         "Prompt positions looked up in the prefix cache.", d(e.prefix_lookup_tokens));
  metric(out, "qvl_image_cache_hits_total", "counter", "Images whose vision features were cached.",
         d(e.image_cache_hits));
  metric(out, "qvl_image_cache_misses_total", "counter", "Images run through the vision tower.",
         d(e.image_cache_misses));
  metric(out, "qvl_image_cache_evictions_total", "counter", "Images dropped from the cache.",
         d(e.image_cache_evictions));
  metric(out, "qvl_image_cache_bytes", "gauge", "Bytes of cached vision features.",
         d(e.image_cache_bytes));
  metric(out, "qvl_kv_blocks_total", "gauge", "KV cache pages in the pool.", d(e.kv_pages_total));
  metric(out, "qvl_kv_blocks_used", "gauge", "KV cache pages held by running requests.",
         d(e.kv_pages_used));
  metric(out, "qvl_kv_blocks_cached", "gauge", "Idle KV cache pages holding reusable prefixes.",
         d(e.kv_pages_cached));
  metric(out, "qvl_kv_blocks_free", "gauge", "KV cache pages never used or released empty.",
         d(e.kv_pages_total - e.kv_pages_used - e.kv_pages_cached));
  metric(out, "qvl_kv_evictions_total", "counter", "Cached KV pages reused for other content.",
         d(e.kv_evictions));
  metric(out, "qvl_scheduler_steps_total", "counter", "Batched model steps.", d(e.steps));
  metric(out, "qvl_scheduler_running", "gauge", "Requests in the running batch.", d(e.running));
  metric(out, "qvl_scheduler_waiting", "gauge", "Requests waiting for KV cache room.",
         d(e.waiting));
  header(out, "qvl_batch_size", "histogram", "Requests advanced by one model step.");
  render_buckets(out, "qvl_batch_size", e.batch_size_bounds, e.batch_size_counts, e.batch_size_sum);
  header(out, "qvl_queue_wait_seconds", "histogram",
         "Time from submission to the engine until a request joins the running batch.");
  render_buckets(out, "qvl_queue_wait_seconds", e.queue_wait_bounds, e.queue_wait_counts,
                 e.queue_wait_sum);
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t bucket = 0;
  while (bucket < bounds_.size() && value > bounds_[bucket]) ++bucket;
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

void Histogram::render(const std::string& name, std::string& out) const {
  render_buckets(out, name, bounds_, counts_, sum_);
}

Metrics::Metrics()
    : ttft_(kFastBuckets),
      latency_(kLatencyBuckets),
      image_encode_(kFastBuckets),
      last_scrape_(std::chrono::steady_clock::now()),
      last_cpu_seconds_(process_cpu_seconds()) {}

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, status}];
}

void Metrics::add_tokens(int64_t prompt_tokens, int64_t completion_tokens, int64_t image_tokens,
                         int64_t video_tokens) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += static_cast<uint64_t>(std::max<int64_t>(prompt_tokens, 0));
  completion_tokens_ += static_cast<uint64_t>(std::max<int64_t>(completion_tokens, 0));
  image_tokens_ += static_cast<uint64_t>(std::max<int64_t>(image_tokens, 0));
  video_tokens_ += static_cast<uint64_t>(std::max<int64_t>(video_tokens, 0));
}

void Metrics::add_drafts(int64_t drafted, int64_t accepted) {
  std::lock_guard lock(mutex_);
  draft_tokens_ += static_cast<uint64_t>(std::max<int64_t>(drafted, 0));
  draft_accepted_tokens_ += static_cast<uint64_t>(std::max<int64_t>(accepted, 0));
}

void Metrics::observe_time_to_first_token(double seconds) {
  std::lock_guard lock(mutex_);
  ttft_.observe(seconds);
}

void Metrics::observe_request_latency(double seconds) {
  std::lock_guard lock(mutex_);
  latency_.observe(seconds);
}

void Metrics::observe_image_encode(double seconds) {
  std::lock_guard lock(mutex_);
  image_encode_.observe(seconds);
}

std::string Metrics::render(const LiveGauges& gauges) {
  std::lock_guard lock(mutex_);
  std::string out;
  header(out, "qvl_requests_total", "counter", "HTTP requests by endpoint and status code.");
  for (const auto& [key, count] : requests_) {
    out += "qvl_requests_total{endpoint=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  }
  header(out, "qvl_prompt_tokens_total", "counter",
         "Prompt tokens processed (incl. image tokens).");
  sample(out, "qvl_prompt_tokens_total", static_cast<double>(prompt_tokens_));
  header(out, "qvl_image_tokens_total", "counter", "Image tokens processed.");
  sample(out, "qvl_image_tokens_total", static_cast<double>(image_tokens_));
  header(out, "qvl_video_tokens_total", "counter", "Video tokens processed.");
  sample(out, "qvl_video_tokens_total", static_cast<double>(video_tokens_));
  header(out, "qvl_completion_tokens_total", "counter", "Tokens generated.");
  sample(out, "qvl_completion_tokens_total", static_cast<double>(completion_tokens_));
  header(out, "qvl_draft_tokens_total", "counter",
         "Speculative decoding: draft tokens verified (prompt lookup, jump-forward).");
  sample(out, "qvl_draft_tokens_total", static_cast<double>(draft_tokens_));
  header(out, "qvl_draft_accepted_tokens_total", "counter",
         "Speculative decoding: draft tokens the model agreed with (a decode step saved each).");
  sample(out, "qvl_draft_accepted_tokens_total", static_cast<double>(draft_accepted_tokens_));
  header(out, "qvl_time_to_first_token_seconds", "histogram",
         "Time from admission to the first generated token.");
  ttft_.render("qvl_time_to_first_token_seconds", out);
  header(out, "qvl_request_duration_seconds", "histogram",
         "Chat completion latency, from receipt to the last byte (incl. queueing).");
  latency_.render("qvl_request_duration_seconds", out);
  header(out, "qvl_image_encode_seconds", "histogram",
         "Image decode + preprocessing + vision tower time per request with images.");
  image_encode_.render("qvl_image_encode_seconds", out);
  header(out, "qvl_queue_depth", "gauge", "Requests waiting for a generation slot.");
  sample(out, "qvl_queue_depth", static_cast<double>(gauges.queue_depth));
  header(out, "qvl_active_requests", "gauge", "Requests generating now.");
  sample(out, "qvl_active_requests", static_cast<double>(gauges.active_requests));
  header(out, "qvl_model_ready", "gauge", "1 once the model is loaded.");
  sample(out, "qvl_model_ready", gauges.model_ready ? 1 : 0);
  if (gauges.engine != nullptr) render_engine(out, *gauges.engine);

  const auto now = std::chrono::steady_clock::now();
  const double cpu = process_cpu_seconds();
  const double wall = std::chrono::duration<double>(now - last_scrape_).count();
  const double utilisation = wall > 0 ? (cpu - last_cpu_seconds_) / wall : 0.0;
  last_scrape_ = now;
  last_cpu_seconds_ = cpu;
  header(out, "process_cpu_seconds_total", "counter", "User and system CPU time of the process.");
  sample(out, "process_cpu_seconds_total", cpu);
  header(out, "qvl_process_cpu_utilization", "gauge",
         "CPU cores busy on average since the previous scrape (1 = one full core).");
  sample(out, "qvl_process_cpu_utilization", utilisation);
  header(out, "process_resident_memory_bytes", "gauge", "Resident memory of the process.");
  sample(out, "process_resident_memory_bytes", static_cast<double>(process_resident_bytes()));
  return out;
}

double process_cpu_seconds() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

uint64_t process_resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t total_pages = 0;
  uint64_t resident_pages = 0;
  if (!(statm >> total_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace qvl::server
