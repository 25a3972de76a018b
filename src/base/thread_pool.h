// Persistent worker threads with a blocking parallel-for. Threads are created once; each op
// hands out index ranges, and the calling thread works too. Nested calls run inline.
// Decode runs a few hundred short ops per token, so waking a sleeping thread (a futex round trip of
// tens of microseconds) would dominate: idle workers and a waiting caller first spin for a short
// while (kSpinTime) on an atomic, and only then block on a condition variable. Ranges are claimed
// lock-free and shrink as the work runs out (guided: a share of what is left), so threads stream
// large contiguous ranges first and finish within a small range of each other.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qvl {

// Number of physical cores (hyper-threads of one core count once); at least 1.
int physical_core_count();

class ThreadPool {
 public:
  // More compute threads than this is a mistake, not a machine: refused before any is created.
  static constexpr int kMaxThreads = 1024;

  // threads <= 0 means physical_core_count(). The pool uses threads-1 workers plus the caller.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) over disjoint ranges covering [0, n), each at least `grain` long
  // (except the last). Returns when all are done; rethrows the first exception thrown.
  void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t grain = 1);

  // Parallel regions handed to the workers so far (calls that ran inline do not count).
  uint64_t dispatch_count() const { return dispatches_.load(std::memory_order_relaxed); }

  // Process-wide pool used by kernels; configured once by the CLI (--threads).
  static ThreadPool& global();
  static void set_global_threads(int threads);

 private:
  void worker_loop(int index);
  // Claims and runs ranges of the job published as `generation` until none is left.
  void run_ranges(unsigned generation);
  void finish_range(size_t items);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::mutex submit_mutex_;
  // The current job. A worker reads it after seeing generation_ change; a worker late for a job
  // cannot claim from the next one, as claims carry the job's generation (next_range_).
  std::atomic<const std::function<void(size_t, size_t)>*> job_{nullptr};
  std::atomic<size_t> job_n_{0};
  std::atomic<size_t> job_grain_{1};
  std::atomic<uint64_t> next_range_{0};  // generation << kIndexBits | first unclaimed index
  std::atomic<size_t> items_done_{0};
  std::atomic<unsigned> generation_{0};  // bumped when a job is published
  std::atomic<uint64_t> dispatches_{0};
  std::atomic<bool> stop_{false};
  int sleeping_workers_ = 0;  // blocked on wake_ (guarded by mutex_)
  bool caller_sleeping_ = false;
  std::exception_ptr error_;
};

}  // namespace qvl
