// WeightStore::from_views: a store over tensors that are not in safetensors files (GGUF).
#include "base/error.h"
#include "model/safetensors.h"

namespace qvl {

WeightStore WeightStore::from_views(std::vector<TensorView> views, std::shared_ptr<const void> keep,
                                    const std::string& where) {
  WeightStore store;
  store.where_ = where;
  store.keep_ = std::move(keep);
  for (TensorView& v : views) {
    store.views_.push_back(std::make_unique<TensorView>(std::move(v)));
    const TensorView* view = store.views_.back().get();
    if (!store.index_.emplace(view->name, view).second) {
      fail(ErrorCode::kCorrupt, "tensor '" + view->name + "' appears twice in " + where);
    }
  }
  return store;
}

}  // namespace qvl
