// The human-readable form of `qvl bench` (print_bench_table of bench_report.h).
#include <cstdio>
#include <string>
#include <vector>

#include "cli/bench_report.h"

namespace qvl::cli {
namespace {

using nlohmann::json;

std::string number(const json& v, int decimals = 1) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v.get<double>());
  return buf;
}

void print_machine(const json& m) {
  std::printf("machine   %s, %d physical cores, LLC %s MiB; fp32 %s, bf16 %s, int8 %s\n",
              m["isa"].get<std::string>().c_str(), m["physical_cores"].get<int>(),
              number(m["llc_mib"], 0).c_str(), m["fp32_instruction"].get<std::string>().c_str(),
              m["bf16_instruction"].is_string() ? m["bf16_instruction"].get<std::string>().c_str()
                                                : "absent",
              m["int8_instruction"].get<std::string>().c_str());
  std::printf("  %-8s %16s %18s %18s %18s %16s\n", "threads", "DRAM read GB/s", "sustained GB/s",
              "fp32 FMA GFLOP/s", "bf16 dot GFLOP/s", "int8 dot GOP/s");
  for (auto it = m["threads"].begin(); it != m["threads"].end(); ++it) {
    const json& f = it.value();
    std::printf("  %-8s %16s %18s %18s %18s %16s\n", it.key().c_str(),
                number(f["dram_read_gb_per_s"]).c_str(),
                number(f.value("dram_stream_gb_per_s", json())).c_str(),
                number(f["fp32_fma_gflop_per_s"]).c_str(),
                number(f["bf16_dot_gflop_per_s"]).c_str(), number(f["int8_dot_gop_per_s"]).c_str());
  }
}

// "value (pct%)" of a figure in one run.
std::string cell(const json& run, const std::string& key, const std::string& pct_key) {
  if (!run.contains(key)) return "-";
  std::string s = number(run[key]);
  if (!pct_key.empty() && run.contains(pct_key) && run[pct_key].is_number()) {
    s += " (" + number(run[pct_key], 0) + "%)";
  }
  return s;
}

}  // namespace

void print_bench_table(const json& r) {
  if (!r.contains("runs")) {  // --probe-only
    print_machine(r);
    return;
  }
  std::printf("model     %s\n", r["model"].get<std::string>().c_str());
  std::printf(
      "weights   %s (vision %s), KV cache %s; load %s ms, peak RSS %s MiB (%s before the long "
      "contexts), %s MB read per decode token\n",
      r["quant"].get<std::string>().c_str(), r["vision_weights"].get<std::string>().c_str(),
      r["kv_cache"].get<std::string>().c_str(), number(r["load_ms"], 0).c_str(),
      number(r["peak_rss_mib"], 0).c_str(), number(r["peak_rss_mib_image_and_prompt"], 0).c_str(),
      number(json(r["decode_bytes_per_token"].get<double>() * 1e-6), 0).c_str());
  print_machine(r["machine"]);

  const json& runs = r["runs"];
  const json& last = runs.back();
  struct Row {
    std::string label, key, pct;
  };
  std::vector<Row> rows = {
      {"vision 448x448 ms", "vision_448x448_ms", "vision_448x448_pct_of_peak"},
      {"vision 1024x768 ms", "vision_1024x768_ms", "vision_1024x768_pct_of_peak"},
      {"vision 1600x1200 ms", "vision_1600x1200_ms", "vision_1600x1200_pct_of_peak"},
      {"prompt tok/s (" + number(last["prompt_tokens"], 0) + " tok)", "prompt_tok_per_s",
       "prompt_pct_of_peak"},
      {"decode tok/s", "decode_tok_per_s", "decode_pct_of_dram"}};
  for (auto it = last.begin(); it != last.end(); ++it) {
    const std::string prefix = "decode_tok_per_s_ctx";
    if (it.key().rfind(prefix, 0) == 0) {
      const std::string label = it.key().substr(prefix.size());
      rows.push_back({"decode tok/s at ctx " + label, it.key(), "decode_pct_of_dram_ctx" + label});
    }
  }
  rows.push_back({"TTFT image 448 ms", "ttft_image_448_ms", "ttft_image_448_pct_of_floor"});

  std::printf("\n%-30s", "figure (% of ceiling)");
  for (const json& run : runs) std::printf(" %16s", (number(run["threads"], 0) + " thr").c_str());
  for (auto it = r["scaling"].begin(); it != r["scaling"].end(); ++it) {
    std::printf(" %8s", it.key().c_str());
  }
  std::printf("\n");
  for (const Row& row : rows) {
    if (!last.contains(row.key)) continue;
    std::printf("%-30s", row.label.c_str());
    for (const json& run : runs) std::printf(" %16s", cell(run, row.key, row.pct).c_str());
    for (auto it = r["scaling"].begin(); it != r["scaling"].end(); ++it) {
      std::printf(" %8s", (cell(it.value(), row.key, "") + "x").c_str());
    }
    std::printf("\n");
  }
  std::printf(
      "ceilings: vision %s and prompt %s peak, decode DRAM read (weights + KV), TTFT the "
      "floor at those peaks\n",
      last["vision_arithmetic"].get<std::string>().c_str(),
      last["prefill_arithmetic"].get<std::string>().c_str());

  std::printf("\nstages at %s threads\n", number(last["threads"], 0).c_str());
  for (auto it = last["stages"].begin(); it != last["stages"].end(); ++it) {
    std::printf("  %-24s", it.key().c_str());
    for (auto s = it.value().begin(); s != it.value().end(); ++s) {
      std::printf(" %s %s", s.key().c_str(), number(s.value(), 2).c_str());
    }
    std::printf("\n");
  }
  std::printf("  efficiency (%%)         ");
  for (auto it = last["stage_efficiency"].begin(); it != last["stage_efficiency"].end(); ++it) {
    std::printf(" %s %s", it.key().c_str(), number(it.value(), 0).c_str());
  }
  std::printf("\n");
  if (r.contains("document_pages_per_min")) {
    std::printf(
        "\ndocument (10-page PDF, %s image tokens a page, %s tokens answered, one page at a "
        "time): %s pages/min; per page: render %s ms, vision %s ms, prefill %s ms, decode %s ms\n",
        number(r["document_page_image_tokens"], 0).c_str(),
        number(r["document_decode_tokens"], 0).c_str(),
        number(r["document_pages_per_min"], 1).c_str(),
        number(r["document_render_ms_per_page"], 0).c_str(),
        number(r["document_vision_ms_per_page"], 0).c_str(),
        number(r["document_prefill_ms_per_page"], 0).c_str(),
        number(r["document_decode_ms_per_page"], 0).c_str());
  }
  if (r.contains("video_10s_640x360_tokens")) {
    std::printf(
        "\nvideo (10 s 640x360 %s clip, %s frames): %s tokens, decode %s ms, vision %s ms, TTFT "
        "%s ms; as images: %s tokens, vision %s ms, TTFT %s ms\n",
        r["video_clip_codec"].get<std::string>().c_str(),
        number(r["video_10s_640x360_frames"], 0).c_str(),
        number(r["video_10s_640x360_tokens"], 0).c_str(), number(r["video_decode_ms"], 0).c_str(),
        number(r["video_vision_ms"], 0).c_str(), number(r["ttft_video_10s_ms"], 0).c_str(),
        number(r["video_as_images_tokens"], 0).c_str(),
        number(r["video_as_images_vision_ms"], 0).c_str(),
        number(r["ttft_video_as_images_ms"], 0).c_str());
  }
}

}  // namespace qvl::cli
