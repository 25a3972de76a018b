// Time per sampled token over a Qwen3-VL-sized vocabulary (151936 logits). The argument is
// the standard deviation of the random logits: 1 is a flat distribution (the worst case for
// top_p, whose nucleus then spans most of the vocabulary), 4 is peaked like a confident model.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "engine/sampler.h"
#include "engine/token_logprobs.h"
#include "ops/elementwise_kernels.h"
#include "ops/softmax_stats.h"

namespace {

constexpr int64_t kVocab = 151936;

std::vector<float> random_logits(float stddev) {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> logits(kVocab);
  for (float& x : logits) x = normal(rng);
  return logits;
}

void run(benchmark::State& state, qvl::SamplingParams params,
         const std::vector<int64_t>& prompt_ids = {}, const std::vector<int64_t>& generated = {}) {
  const std::vector<float> logits = random_logits(static_cast<float>(state.range(0)));
  params.seed = 1;
  qvl::Sampler sampler(params);
  for (auto _ : state) {
    benchmark::DoNotOptimize(sampler.sample(logits.data(), kVocab, prompt_ids, generated));
  }
}

void BM_Greedy(benchmark::State& state) {
  qvl::SamplingParams p;
  p.temperature = 0;
  run(state, p);
}

void BM_TopP09Temperature07(benchmark::State& state) {
  qvl::SamplingParams p;
  p.temperature = 0.7f;
  p.top_p = 0.9f;
  run(state, p);
}

void BM_TopK40(benchmark::State& state) {
  qvl::SamplingParams p;
  p.top_k = 40;
  run(state, p);
}

void BM_TemperatureOnly(benchmark::State& state) {
  qvl::SamplingParams p;
  p.temperature = 0.7f;
  run(state, p);
}

// Qwen3-VL's recommended settings plus penalties over a 2000-token prompt and 500 tokens out.
void BM_QwenDefaultsWithPenalties(benchmark::State& state) {
  qvl::SamplingParams p;
  p.temperature = 0.7f;
  p.top_p = 0.8f;
  p.top_k = 20;
  p.repetition_penalty = 1.05f;
  p.presence_penalty = 1.5f;
  std::mt19937_64 rng(9);
  std::vector<int64_t> prompt(2000), generated(500);
  for (int64_t& id : prompt) id = static_cast<int64_t>(rng() % kVocab);
  for (int64_t& id : generated) id = static_cast<int64_t>(rng() % kVocab);
  run(state, p, prompt, generated);
}

// A step's log-probabilities (OpenAI `logprobs`, top 5): its log-softmax normaliser over the
// vocabulary dominates. BM_ExpSum/reference is the scalar double exp (the kernel before vector
// exponentials), BM_ExpSum/vector the dispatched kernel.
void BM_StepLogprobs(benchmark::State& state) {
  const std::vector<float> logits = random_logits(static_cast<float>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(qvl::step_logprobs(logits.data(), kVocab, 7, 5));
}
void BM_ExpSum(benchmark::State& state, bool reference) {
  const std::vector<float> logits = random_logits(4.0f);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        reference ? qvl::ops::elementwise_kernels::exp_sum_reference(logits.data(), kVocab)
                  : qvl::ops::exp_sum(logits.data(), kVocab));
  }
}
BENCHMARK(BM_StepLogprobs)->Arg(4)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ExpSum, reference, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ExpSum, vector, false)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Greedy)->Arg(1)->Arg(4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TopP09Temperature07)->Arg(1)->Arg(4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TopK40)->Arg(1)->Arg(4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TemperatureOnly)->Arg(1)->Arg(4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_QwenDefaultsWithPenalties)->Arg(4)->Unit(benchmark::kMicrosecond);

}  // namespace
