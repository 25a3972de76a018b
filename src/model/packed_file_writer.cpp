#include "model/packed_file_writer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <set>

#include "base/error.h"
#include "base/mapped_file.h"
#include "model/config.h"
#include "model/fused_experts.h"
#include "model/packed_file.h"
#include "model/text_decoder.h"
#include "model/vision_weights.h"
#include "model/weight_types.h"
#include "model/weights_util.h"

namespace qvl {
namespace {

struct PackJob {
  std::string name;
  ops::WeightRef source;
  ops::QuantType type;
  size_t bytes = 0;
  // The source is a mapped file whose pages may leave memory once read (not a copy in memory
  // that other matrices are still to be made from: madvise would zero it).
  bool release_source = true;
  // Makes the source's values first (generated models), or nothing.
  std::function<void()> make_source = {};
};

// Drops a source tensor's pages from this process once it is written (they stay in the page
// cache), so the resident set stays near one matrix instead of growing to the whole folder.
void release_pages(const void* data, size_t n) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (start + page - 1) & ~(page - 1), end = (start + n) & ~(page - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

// Which stored tensors are matrices, of which shape and type. Loading with kExact makes every
// matrix a view of its stored tensor, so the model loaders decide (no list of names here);
// views are mapped back to tensor names by address.
class PackPlan {
 public:
  PackPlan(const ModelConfig& config, const WeightStore& store, const WeightTypes& types) {
    for (const auto& name : store.names()) by_data_.emplace(store.get(name).data, name);
    const TextWeights text = load_text_weights(config, store, WeightTypes{});
    head_tied_ = text.tied_lm_head;
    for (const TextLayerWeights& l : text.layers) {
      for_each_layer_matrix(l, [&](const ops::PackedMatrix& m) {
        // The router is packed in the type loading gives it (at least 8-bit).
        const ops::QuantType type = l.sparse && &m == &l.sparse->router
                                        ? sparse_router_type(stored_type(types.text))
                                        : stored_type(types.text);
        add(name_of(m), m, type);
      });
    }
    // Always under this name, tied or not, so loaders find the head without packing.
    add(kPackedHeadName, text.lm_head, stored_type(types.lm_head));
    const VisionWeights vision = load_vision_weights(config.vision, store, ops::QuantType::kExact);
    std::vector<const LinearWeights*> linears;
    for (const VisionBlockWeights& b : vision.blocks) {
      linears.insert(linears.end(), {&b.qkv, &b.proj, &b.fc1, &b.fc2});
    }
    linears.insert(linears.end(), {&vision.merger.fc1, &vision.merger.fc2});
    for (const MergerWeights& m : vision.deepstack_mergers) {
      linears.insert(linears.end(), {&m.fc1, &m.fc2});
    }
    for (const LinearWeights* l : linears) {
      add(name_of(l->weight), l->weight, stored_type(types.vision));
    }
    // vision.patch_embed is not a stored tensor (the conv kernel summed over its frames):
    // loaders derive and pack it from the stored conv, which is small.
  }

  const std::vector<PackJob>& jobs() const { return jobs_; }
  bool head_tied() const { return head_tied_; }

 private:
  std::string name_of(const ops::PackedMatrix& m) const {
    auto it = by_data_.find(m.exact_source().data);
    QVL_CHECK(it != by_data_.end());
    return it->second;
  }
  void add(const std::string& name, const ops::PackedMatrix& view, ops::QuantType wanted) {
    const ops::WeightRef& source = view.exact_source();
    // A matrix the packed types cannot hold is stored as it is; loaders keep it exact too.
    const ops::QuantType type = fitting_type(wanted, source.cols);
    if (type == ops::QuantType::kExact) return;
    PackJob job{name, source, type};
    try {
      job.bytes = ops::packed_size_bytes(type, source.rows, source.cols);
    } catch (const Error& e) {
      fail(e.code(),
           "cannot pack weight '" + name + "' as " + ops::quant_type_name(type) + ": " + e.what());
    }
    jobs_.push_back(std::move(job));
  }

  std::map<const void*, std::string> by_data_;
  std::vector<PackJob> jobs_;
  bool head_tied_ = false;
};

TensorSpec stored_tensor(const TensorView& t, bool release) {
  const TensorView* view = &t;
  return {t.name, t.dtype, t.shape, [view, release](int64_t offset, int64_t count, uint8_t* out) {
            const size_t es = dtype_size(view->dtype);
            std::memcpy(out, view->data + offset * es, static_cast<size_t>(count) * es);
            if (release && static_cast<size_t>(offset + count) * es == view->nbytes) {
              release_pages(view->data, view->nbytes);
            }
          }};
}

ops::PackedMatrix pack(const PackJob& job) {
  if (job.make_source) job.make_source();
  ops::PackedMatrix m = ops::PackedMatrix::pack(job.source, job.type);
  if (!job.release_source) return m;
  release_pages(job.source.data, static_cast<size_t>(job.source.rows * job.source.cols) *
                                     ops::weight_type_size(job.source.type));
  return m;
}

// Packs the matrices in order, each one while the previous one is being written, so the
// single-threaded copy into the page cache overlaps the thread pool's packing instead of
// leaving the pool idle. Holds at most two packed matrices.
class PackAhead {
 public:
  explicit PackAhead(const std::vector<PackJob>& jobs) : jobs_(jobs) {}
  ~PackAhead() {
    if (next_.valid()) next_.wait();
  }
  ops::PackedMatrix take(size_t index) {
    ops::PackedMatrix m = next_.valid() && next_index_ == index ? next_.get() : pack(jobs_[index]);
    if (index + 1 < jobs_.size()) {
      next_index_ = index + 1;
      next_ = std::async(std::launch::async, [this, index] { return pack(jobs_[index + 1]); });
    }
    return m;
  }

 private:
  const std::vector<PackJob>& jobs_;
  std::future<ops::PackedMatrix> next_;
  size_t next_index_ = 0;
};

TensorSpec packed_tensor(const PackJob& job, size_t index, PackAhead& ahead) {
  TensorSpec spec{job.name, DType::kU8, {static_cast<int64_t>(job.bytes)}, {}};
  spec.produce = [index, &ahead](const ByteSink& sink) {
    const ops::PackedMatrix m = ahead.take(index);
    sink(m.bytes(), m.size_bytes());
  };
  return spec;
}

// What a file holds besides the store's stored tensors: matrices packed while writing (`jobs`)
// and matrices the store already holds packed (`copies`, written as they are).
struct FileContents {
  std::vector<PackJob> jobs;
  std::vector<std::string> copies;
  bool head_tied = false;
  bool release_pages = true;  // the store is mapped files only (see PackJob::release_source)
};

PackedFileSummary write_file(const WeightStore& store, const FileContents& contents,
                             const std::string& quant, const WeightTypes& types,
                             const std::string& out_path, const PackedFileExtras& extras) {
  SafeTensorsWriteOptions options;
  options.alignment = kPackedAlignment;
  options.metadata = extras.metadata;
  options.metadata[kPackedFormatKey] = kPackedFormatName;
  options.metadata[kPackedVersionKey] = std::to_string(kPackedVersion);
  options.metadata[kPackedQuantKey] = quant;
  options.metadata[kPackedVisionQuantKey] = ops::quant_type_name(types.vision);
  options.metadata[kPackedLayoutKey] = packed_layout_fingerprint();
  options.metadata[kPackedHeadTiedKey] = contents.head_tied ? "true" : "false";
  std::set<std::string> packed_names;
  for (const PackJob& job : contents.jobs) {
    options.metadata[kPackedTensorPrefix + job.name] =
        packed_tensor_entry(job.type, job.source.rows, job.source.cols);
    packed_names.insert(job.name);
  }
  for (const std::string& name : contents.copies) {
    const PackedTensor& p = *store.packed(name);
    options.metadata[kPackedTensorPrefix + name] = packed_tensor_entry(p.type, p.rows, p.cols);
  }

  // Small things first (files, norms, biases: what loading reads), then the stored tensors by
  // size, then the packed matrices in model order.
  std::vector<TensorSpec> specs = extras.blobs;
  std::vector<const TensorView*> stored;
  for (const auto& name : store.names()) {
    if (!packed_names.count(name)) stored.push_back(&store.get(name));
  }
  std::stable_sort(stored.begin(), stored.end(),
                   [](const TensorView* a, const TensorView* b) { return a->nbytes < b->nbytes; });
  for (const TensorView* t : stored) specs.push_back(stored_tensor(*t, contents.release_pages));
  for (const std::string& name : contents.copies) {
    TensorSpec spec = stored_tensor(*store.packed(name)->bytes, contents.release_pages);
    spec.name = name;
    specs.push_back(std::move(spec));
  }
  PackAhead ahead(contents.jobs);
  for (size_t i = 0; i < contents.jobs.size(); ++i) {
    specs.push_back(packed_tensor(contents.jobs[i], i, ahead));
  }
  write_safetensors(out_path, specs, options);
  // Read back from disk on first use rather than mapped from the pages just written (see
  // drop_cached_pages): a 29-token q8 prompt took 516-546 ms on the fresh file, 362-427 ms once
  // re-read (2B, AVX-512).
  drop_cached_pages(out_path);
  return {contents.jobs.size() + contents.copies.size(), stored.size()};
}

ops::QuantType checked_quant(const std::string& quant) {
  const ops::QuantType type = ops::parse_quant_type(quant);
  if (type == ops::QuantType::kExact) {
    fail(ErrorCode::kInvalidArgument,
         "exact cannot be pre-packed: it computes on the stored bf16 weights, so load the model "
         "folder itself; pre-pack with bf16, q8 or q4");
  }
  return type;
}

}  // namespace

PackedFileSummary write_packed_model_file(const std::string& model_dir, const std::string& quant,
                                          const std::string& out_path,
                                          const PackedFileExtras& extras,
                                          const std::string& vision_quant) {
  checked_quant(quant);
  const ModelConfig config = load_model_config(model_dir);
  WeightStore store = WeightStore::open_folder(model_dir);
  std::map<std::string, std::function<void()>> experts =
      split_fused_experts_lazily(config.text, store);
  const WeightTypes types = weight_types_for(quant, "", vision_quant);
  const PackPlan plan(config, store, types);
  FileContents contents{plan.jobs(), {}, plan.head_tied(), true};
  for (PackJob& job : contents.jobs) {
    auto it = experts.find(job.name);
    if (it == experts.end()) continue;
    job.make_source = std::move(it->second);
    experts.erase(it);
  }
  // Experts too narrow to pack are written as they are: made now.
  for (auto& [name, make] : experts) make();
  return write_file(store, contents, quant, types, out_path, extras);
}

PackedFileSummary write_packed_store_file(const ModelConfig& config, const WeightStore& store,
                                          const std::string& quant, const std::string& out_path,
                                          const PackedFileExtras& extras,
                                          const std::string& vision_quant) {
  checked_quant(quant);
  const WeightTypes types = weight_types_for(quant, "", vision_quant);
  FileContents contents;
  contents.release_pages = false;  // a GGUF store holds converted copies in memory
  contents.copies = store.packed_names();
  // As load_text_weights decides: the embedding serves as the head unless lm_head.weight exists.
  contents.head_tied = config.tie_word_embeddings || !store.has("lm_head.weight");
  const int64_t vocab = config.text.vocab_size, hidden = config.text.hidden_size;
  const ops::QuantType head = fitting_type(stored_type(types.lm_head), hidden);
  if (head != ops::QuantType::kExact) {
    const std::string source =
        contents.head_tied ? "model.language_model.embed_tokens.weight" : "lm_head.weight";
    PackJob job{kPackedHeadName, matrix_weight(store, source, vocab, hidden), head};
    job.bytes = ops::packed_size_bytes(head, vocab, hidden);
    job.release_source = false;
    contents.jobs.push_back(std::move(job));
  }
  return write_file(store, contents, quant, types, out_path, extras);
}

PackedFileSummary write_packed_generated_file(const ModelConfig& config,
                                              const std::vector<TensorSpec>& tensors,
                                              const std::function<bool(const std::string&)>& lazy,
                                              const std::string& quant, const std::string& out_path,
                                              const PackedFileExtras& extras) {
  checked_quant(quant);
  const WeightTypes types = weight_types_for(quant, "", "");
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const TensorSpec& t : tensors) {
    offsets.push_back(total);
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    total += (static_cast<size_t>(n) * dtype_size(t.dtype) + page - 1) / page * page;
  }
  const std::shared_ptr<uint8_t> memory = reserve_unbacked_memory(total);
  std::vector<TensorView> views;
  std::map<std::string, const TensorSpec*> deferred;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& t = tensors[i];
    TensorView v{t.name, "generated weights", t.dtype, t.shape, memory.get() + offsets[i], 0};
    v.nbytes = static_cast<size_t>(v.numel()) * dtype_size(t.dtype);
    if (lazy(t.name)) {
      deferred[t.name] = &t;
    } else {
      t.fill(0, v.numel(), const_cast<uint8_t*>(v.data));
    }
    views.push_back(std::move(v));
  }
  const WeightStore store = WeightStore::from_views(std::move(views), memory, "generated weights");
  const PackPlan plan(config, store, types);
  FileContents contents{plan.jobs(), {}, plan.head_tied(), false};
  for (PackJob& job : contents.jobs) {
    auto it = deferred.find(job.name);
    if (it == deferred.end()) continue;
    const TensorSpec* spec = it->second;
    const TensorView* view = &store.get(job.name);
    job.make_source = [spec, view] {
      spec->fill(0, view->numel(), const_cast<uint8_t*>(view->data));
    };
    deferred.erase(it);
  }
  if (!deferred.empty()) {
    fail(ErrorCode::kInvalidArgument,
         "generated tensor '" + deferred.begin()->first + "' is not a packed matrix");
  }
  return write_file(store, contents, quant, types, out_path, extras);
}

}  // namespace qvl
