#include "cli/bench_report.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "model/weight_types.h"
#include "ops/attention.h"
#include "ops/isa.h"
#include "ops/packed_matrix.h"

namespace qvl::cli {
namespace {

using nlohmann::json;

double round1(double v) {
  return std::round(v * 10) / 10;
}

// value as a percentage of ceiling, null when either is unknown.
json pct(double value, std::optional<double> ceiling) {
  if (!ceiling || *ceiling <= 0 || !(value > 0)) return nullptr;
  return round1(100.0 * value / *ceiling);
}

json optional_json(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

std::optional<double> peak_gops(const ops::ProbeFigures& p, ops::MatmulArithmetic a) {
  switch (a) {
    case ops::MatmulArithmetic::kF32:
      return p.fp32_fma_gflop_per_s;
    case ops::MatmulArithmetic::kBF16Dot:
      return p.bf16_dot_gflop_per_s;
    case ops::MatmulArithmetic::kInt8Dot:
      return p.int8_dot_gop_per_s;
  }
  return std::nullopt;
}

std::string context_label(int64_t c) {
  return c % 1024 == 0 && c > 0 ? std::to_string(c / 1024) + "k" : std::to_string(c);
}

// Operations (2 per multiply-add) of one image and of a prefill of n tokens.
double vision_ops(const ModelCost& c, int64_t patches) {
  const auto p = static_cast<double>(patches);
  return p * c.vision_ops_per_patch + p * p * c.vision_attention_ops_per_pair;
}

double prefill_ops(const ModelCost& c, int64_t tokens) {
  const auto n = static_cast<double>(tokens);
  return n * c.text_ops_per_token + n * (n + 1) / 2 * c.text_attention_ops_per_pair +
         c.lm_head_ops_per_row;
}

double stage_ms(const StageTimes& stages, const std::string& name) {
  for (const auto& [n, ms] : stages) {
    if (n == name) return ms;
  }
  return 0;
}

json stages_json(const StageTimes& stages) {
  json j = json::object();
  for (const auto& [name, ms] : stages) j[name] = ms;
  return j;
}

json run_json(const BenchContext& ctx, const RunFigures& f) {
  const ModelCost& cost = ctx.info->cost;
  const ops::ProbeFigures& probe = ctx.machine->at(f.threads);
  const ops::QuantType text_type = stored_type(ops::parse_quant_type(ctx.info->weights));
  const ops::QuantType vision_type = stored_type(ops::parse_quant_type(cost.vision_weights));
  json j = {{"threads", f.threads}};
  json stages = json::object(), efficiency = json::object();

  const auto vision = [&](const std::string& key, const VisionFigure& v) {
    if (v.patches == 0) return;
    const auto peak = peak_gops(probe, ops::matmul_arithmetic(vision_type, v.patches));
    const double gops = vision_ops(cost, v.patches) / v.ms * 1e-6;
    j[key + "_ms"] = v.ms;
    j[key + "_gflop_per_s"] = gops;
    j[key + "_pct_of_peak"] = pct(gops, peak);
    const double matmul_ms = stage_ms(v.stages, "patch_embed") + stage_ms(v.stages, "blocks_gemm") +
                             stage_ms(v.stages, "merger_deepstack");
    const double matmul_ops = static_cast<double>(v.patches) * cost.vision_ops_per_patch;
    efficiency[key + "_matmul_pct_of_peak"] = pct(matmul_ops / matmul_ms * 1e-6, peak);
    stages[key + "_ms"] = stages_json(v.stages);
  };
  vision("vision_448x448", f.vision_small);
  vision("vision_1024x768", f.vision_large);
  vision("vision_1600x1200", f.vision_page);
  // Attention grows with the square of the patches: how much more a page costs than 1024x768.
  if (f.vision_page.patches > 0 && f.vision_large.ms > 0) {
    j["vision_1600x1200_over_1024x768"] = f.vision_page.ms / f.vision_large.ms;
  }
  j["vision_arithmetic"] =
      ops::matmul_arithmetic_name(ops::matmul_arithmetic(vision_type, f.vision_small.patches));
  // The tower's attention: bf16 products with every fast type where the CPU has them.
  j["vision_attention_arithmetic"] =
      ops::attention_products_name(vision_type != ops::QuantType::kExact);

  const ops::MatmulArithmetic prefill_arithmetic =
      ops::matmul_arithmetic(text_type, f.prompt_tokens);
  const auto prefill_peak = peak_gops(probe, prefill_arithmetic);
  const double prefill_gops = prefill_ops(cost, f.prompt_tokens) * f.prompt_tok_per_s /
                              static_cast<double>(f.prompt_tokens) * 1e-9;
  j["prompt_tokens"] = f.prompt_tokens;
  j["prompt_tok_per_s"] = f.prompt_tok_per_s;
  j["prompt_gflop_per_s"] = prefill_gops;
  j["prompt_pct_of_peak"] = pct(prefill_gops, prefill_peak);
  j["prefill_arithmetic"] = ops::matmul_arithmetic_name(prefill_arithmetic);
  stages["prefill_ms"] = stages_json(f.prefill_stages);
  const double gemm_ms = stage_ms(f.prefill_stages, "gemm");
  efficiency["prefill_gemm_pct_of_peak"] =
      pct(static_cast<double>(f.prompt_tokens) * cost.text_ops_per_token / gemm_ms * 1e-6,
          prefill_peak);

  // Decode reads every weight once per token, plus the KV cache of the context so far.
  const std::optional<double> dram = probe.dram_read_gb_per_s;
  // The sustained ceiling beside the burst one (ops/machine_probe.h).
  const std::optional<double> stream = probe.dram_stream_gb_per_s;
  const auto decode_gb_per_s = [&](double tok_per_s, double mean_context) {
    return (static_cast<double>(cost.decode_weight_bytes) +
            static_cast<double>(cost.kv_bytes_per_position) * mean_context) *
           tok_per_s * 1e-9;
  };
  j["decode_tokens"] = ctx.settings->decode_tokens;
  j["decode_tok_per_s"] = f.decode_tok_per_s;
  j["decode_pool_dispatches_per_token"] = f.decode_dispatches_per_token;
  j["decode_gb_per_s"] = decode_gb_per_s(f.decode_tok_per_s, f.decode_mean_context);
  j["decode_pct_of_dram"] = pct(j["decode_gb_per_s"].get<double>(), dram);
  j["decode_pct_of_dram_stream"] = pct(j["decode_gb_per_s"].get<double>(), stream);
  for (const ContextFigure& c : f.contexts) {
    const std::string label = context_label(c.context);
    j["decode_tok_per_s_ctx" + label] = c.tok_per_s;
    j["decode_pct_of_dram_ctx" + label] = pct(decode_gb_per_s(c.tok_per_s, c.mean_context), dram);
    j["decode_pct_of_dram_stream_ctx" + label] =
        pct(decode_gb_per_s(c.tok_per_s, c.mean_context), stream);
    if (c.context > 0) {
      stages["decode_ctx" + label + "_ms_per_token"] = stages_json(c.stages);
      // Decode attention reads the KV cache of the context once per token.
      const double attention_ms = stage_ms(c.stages, "attention");
      if (attention_ms > 0) {
        const double gb_per_s =
            static_cast<double>(cost.kv_bytes_per_position) * c.mean_context / attention_ms * 1e-6;
        efficiency["decode_attention_gb_per_s_ctx" + label] = gb_per_s;
        efficiency["decode_attention_pct_of_dram_ctx" + label] = pct(gb_per_s, dram);
      }
    }
  }
  stages["decode_ms_per_token"] = stages_json(f.decode_stages);
  const auto matrix_bytes = static_cast<double>(cost.decode_weight_bytes - cost.lm_head_bytes);
  efficiency["decode_gemv_pct_of_dram"] =
      pct(matrix_bytes / stage_ms(f.decode_stages, "gemv") * 1e-6, dram);
  efficiency["decode_gemv_pct_of_dram_stream"] =
      pct(matrix_bytes / stage_ms(f.decode_stages, "gemv") * 1e-6, stream);
  efficiency["decode_lm_head_pct_of_dram"] = pct(
      static_cast<double>(cost.lm_head_bytes) / stage_ms(f.decode_stages, "lm_head") * 1e-6, dram);
  // Bytes each core keeps in flight while streaming weights (Little's law with the probe's idle
  // latency), beside what the probe's plain sustained read keeps (machine.threads[n]): a kernel
  // below the read's figure leaves memory parallelism unused; at it, DRAM is the limit.
  const double latency_ns = ctx.machine->dram_latency_ns;
  const auto in_flight = [&](double bytes, double ms) -> json {
    if (!(latency_ns > 0) || !(ms > 0)) return nullptr;
    return std::round(bytes / ms * 1e-6 / f.threads * latency_ns);
  };
  efficiency["decode_gemv_bytes_in_flight_per_core"] =
      in_flight(matrix_bytes, stage_ms(f.decode_stages, "gemv"));
  efficiency["decode_lm_head_bytes_in_flight_per_core"] =
      in_flight(static_cast<double>(cost.lm_head_bytes), stage_ms(f.decode_stages, "lm_head"));

  // The fastest a first token after a 448x448 image could come: its vision and prefill
  // operations at the peaks of their arithmetic (decode, preprocessing and sampling for free).
  j["ttft_image_448_ms"] = f.ttft_image_448_ms;
  const auto vision_peak =
      peak_gops(probe, ops::matmul_arithmetic(vision_type, f.vision_small.patches));
  const auto ttft_prefill_peak =
      peak_gops(probe, ops::matmul_arithmetic(text_type, f.ttft_prompt_tokens));
  if (vision_peak && ttft_prefill_peak && f.vision_small.patches > 0) {
    const double floor_ms = vision_ops(cost, f.vision_small.patches) / *vision_peak * 1e-6 +
                            prefill_ops(cost, f.ttft_prompt_tokens) / *ttft_prefill_peak * 1e-6;
    j["ttft_image_448_floor_ms"] = floor_ms;
    j["ttft_image_448_pct_of_floor"] = pct(floor_ms, f.ttft_image_448_ms);
  }
  j["stages"] = stages;
  j["stage_efficiency"] = efficiency;
  return j;
}

// Speed-up of `to` over `from` for each figure both have (times: from / to; rates: to / from).
json scaling_json(const json& from, const json& to) {
  json s = json::object();
  for (auto it = from.begin(); it != from.end(); ++it) {
    const std::string& key = it.key();
    const bool time = key.ends_with("_ms") && key.rfind("ttft_image_448_floor", 0) != 0;
    const bool rate =
        key.ends_with("_tok_per_s") || key.find("_tok_per_s_ctx") != std::string::npos;
    if (!(time || rate) || !it->is_number() || !to.contains(key) || !to[key].is_number()) continue;
    const double a = it->get<double>(), b = to[key].get<double>();
    if (a > 0 && b > 0) s[key] = std::round((time ? a / b : b / a) * 100) / 100;
  }
  return s;
}

}  // namespace

json machine_json(const ops::MachineProbe& m) {
  json threads = json::object();
  for (const ops::ProbeFigures& f : m.figures) {
    threads[std::to_string(f.threads)] = {
        {"dram_read_gb_per_s", f.dram_read_gb_per_s},
        {"dram_concurrent_rounds", f.dram_concurrent_rounds},
        {"dram_stream_gb_per_s", f.dram_stream_gb_per_s},
        {"dram_stream_bytes_in_flight_per_core",
         m.dram_latency_ns > 0
             ? json(std::round(f.dram_stream_gb_per_s / f.threads * m.dram_latency_ns))
             : json(nullptr)},
        {"fp32_fma_gflop_per_s", f.fp32_fma_gflop_per_s},
        {"bf16_dot_gflop_per_s", optional_json(f.bf16_dot_gflop_per_s)},
        {"int8_dot_gop_per_s", f.int8_dot_gop_per_s}};
  }
  const ops::CpuFeatures& cpu = ops::cpu_features();
  return {
      {"isa", ops::isa_level_name(m.isa)},
      {"arch", cpu.arch},
      {"cpu_features", cpu.flags},
      {"sve_vector_bits", cpu.sve_vector_bits},
      {"physical_cores", m.physical_cores},
      {"llc_mib", static_cast<double>(m.llc_bytes) / (1 << 20)},
      {"buffer_mib", static_cast<double>(m.buffer_bytes) / (1 << 20)},
      {"dram_latency_ns", m.dram_latency_ns},
      {"fp32_instruction", m.fp32_instruction},
      {"bf16_instruction", m.bf16_instruction.empty() ? json(nullptr) : json(m.bf16_instruction)},
      {"int8_instruction", m.int8_instruction},
      {"int8_gemm_kernel", m.int8_gemm_kernel},
      {"threads", threads}};
}

json bench_json(const BenchContext& ctx, const std::vector<RunFigures>& runs) {
  const ModelCost& cost = ctx.info->cost;
  json j = {{"model", ctx.model},
            {"quant", ctx.info->weights},
            {"kv_cache", ctx.info->kv_cache},
            {"vision_weights", cost.vision_weights},
            {"repeats", ctx.settings->repeats},
            {"load_ms", ctx.load_ms},
            {"peak_rss_mib", ctx.peak_rss_mib},
            {"peak_rss_mib_image_and_prompt", runs.front().peak_rss_mib_before_contexts},
            {"decode_bytes_per_token", cost.decode_weight_bytes},
            {"kv_bytes_per_token", cost.kv_bytes_per_position},
            {"machine", machine_json(*ctx.machine)}};
  json all = json::array();
  for (const RunFigures& f : runs) all.push_back(run_json(ctx, f));
  // The last run's figures at the top level: `--threads N` reads as it always did.
  for (auto it = all.back().begin(); it != all.back().end(); ++it) j[it.key()] = it.value();
  j["runs"] = all;
  json scaling = json::object();
  for (size_t i = 1; i < all.size(); ++i) {
    scaling[std::to_string(runs[0].threads) + "->" + std::to_string(runs[i].threads)] =
        scaling_json(all[0], all[i]);
  }
  j["scaling"] = scaling;
  return j;
}

}  // namespace qvl::cli
