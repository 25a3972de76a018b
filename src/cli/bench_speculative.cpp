#include "cli/bench_speculative.h"

#include <algorithm>

#include "base/log.h"

namespace qvl::cli {
namespace {

constexpr const char* kReceipt =
    "CORNER BAKERY & CAFE\n12 Harbour Street, Portsmouth\nTel 023 9281 4470\n"
    "Date: 14/03/2026  Time: 08:42\nTill 2  Server: Maria\n\n"
    "2 x Flat white            6.40\n1 x Almond croissant      3.10\n"
    "1 x Sourdough loaf        4.25\n1 x Orange juice (large)  3.60\n\n"
    "Subtotal                 17.35\nVAT 20% included          2.89\nTOTAL                    "
    "17.35\n"
    "Card payment (contactless) 17.35\nThank you for visiting!";

constexpr const char* kReceiptSchema = R"({"type": "object", "properties": {
  "merchant_name": {"type": "string"}, "merchant_address": {"type": "string"},
  "date": {"type": "string"}, "time": {"type": "string"},
  "line_items": {"type": "array", "items": {"type": "object", "properties": {
    "description": {"type": "string"}, "quantity": {"type": "integer"},
    "total_price": {"type": "number"}},
    "required": ["description", "quantity", "total_price"], "additionalProperties": false}},
  "subtotal": {"type": "number"}, "tax": {"type": "number"}, "total": {"type": "number"},
  "payment_method": {"type": "string"}},
  "required": ["merchant_name", "merchant_address", "date", "time", "line_items", "subtotal",
               "tax", "total", "payment_method"], "additionalProperties": false})";

constexpr const char* kPage =
    "Quarterly report, second quarter\n\nRevenue grew by 12 percent compared with the same "
    "quarter last year, driven by the new subscription plans and by stronger sales in the "
    "northern region. Operating costs rose by 4 percent, mostly because of the new warehouse in "
    "Leeds, which opened in May. The board approved a dividend of 8 pence per share.\n\n"
    "| Region | Revenue | Change |\n|---|---|---|\n| North | 4.2 m | +18% |\n"
    "| South | 3.1 m | +7% |\n| West | 2.6 m | +9% |\n\nOutlook: the company expects revenue "
    "growth of 10 to 12 percent for the full year, and margins close to last year's.";

GenerationRequest task_request(const std::string& name, int unique) {
  GenerationRequest r;
  const std::string tag = "Request " + std::to_string(unique) + ". ";
  std::string text;
  if (name == "json") {
    text = tag + "Extract the receipt's data as JSON.\n\n" + kReceipt;
    r.constraint.kind = OutputConstraint::Kind::kJsonSchema;
    r.constraint.json_schema = kReceiptSchema;
  } else {
    text = tag + "Transcribe this page exactly, as Markdown (keep the table):\n\n" + kPage;
  }
  r.messages.push_back({"user", true, {{ContentPart::Kind::kText, text, -1}}});
  r.sampling.temperature = 0;
  r.sampling.max_tokens = 192;
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Decode steps after the first token: each gave one token plus the drafts it accepted.
double step_ms(const GenerationResult& r) {
  const int64_t steps =
      std::max<int64_t>(1, r.stats.completion_tokens - 1 - r.stats.draft_accepted_tokens);
  return r.stats.decode_ms / static_cast<double>(steps);
}

double decode_rate(const GenerationResult& r) {
  return r.stats.decode_ms > 0
             ? 1000.0 * static_cast<double>(r.stats.completion_tokens - 1) / r.stats.decode_ms
             : 0;
}

}  // namespace

std::vector<SpeculativeTask> measure_speculative(Engine& engine, int repeats) {
  std::vector<SpeculativeTask> out;
  static int counter = 0;
  for (const char* name : {"json", "ocr"}) {
    SpeculativeTask t;
    t.name = name;
    std::vector<double> plain_rate, rate, plain_step, step;
    for (int rep = 0; rep < repeats; ++rep) {
      GenerationRequest r = task_request(name, ++counter);
      r.draft_tokens = 0;
      const GenerationResult plain = engine.generate(r);
      r.draft_tokens = -1;
      const GenerationResult fast = engine.generate(r);
      t.same_answer = t.same_answer && fast.completion_ids == plain.completion_ids;
      t.completion_tokens = plain.stats.completion_tokens;
      plain_rate.push_back(decode_rate(plain));
      rate.push_back(decode_rate(fast));
      plain_step.push_back(step_ms(plain));
      step.push_back(step_ms(fast));
      t.draft_tokens += fast.stats.draft_tokens;
      t.accepted_tokens += fast.stats.draft_accepted_tokens;
    }
    if (!t.same_answer) {
      QVL_LOG(kError) << "bench: speculative decoding changed the " << name << " task's answer";
    }
    t.plain_tok_per_s = median(plain_rate);
    t.tok_per_s = median(rate);
    t.plain_step_ms = median(plain_step);
    t.step_ms = median(step);
    out.push_back(t);
  }
  return out;
}

void add_speculative_json(const std::vector<SpeculativeTask>& tasks, nlohmann::json& out) {
  for (const SpeculativeTask& t : tasks) {
    const std::string k = "speculative_" + t.name + "_";
    out[k + "completion_tokens"] = t.completion_tokens;
    out[k + "plain_tok_per_s"] = t.plain_tok_per_s;
    out[k + "tok_per_s"] = t.tok_per_s;
    out[k + "speedup"] = t.plain_tok_per_s > 0 ? t.tok_per_s / t.plain_tok_per_s : 0;
    out[k + "plain_step_ms"] = t.plain_step_ms;
    out[k + "step_ms"] = t.step_ms;
    out[k + "draft_tokens"] = t.draft_tokens;
    out[k + "acceptance"] =
        t.draft_tokens > 0 ? static_cast<double>(t.accepted_tokens) / t.draft_tokens : 0;
    out[k + "same_answer"] = t.same_answer;
  }
}

}  // namespace qvl::cli
