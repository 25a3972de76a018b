// WeightStore::from_views: a store over tensors that are not in safetensors files (GGUF).
#include "base/error.h"
#include "model/safetensors.h"

namespace qvl {

WeightStore WeightStore::from_views(std::vector<TensorView> views, std::shared_ptr<const void> keep,
                                    const std::string& where) {
  WeightStore store;
  store.where_ = where;
  store.replace_with_views({}, std::move(views), std::move(keep));
  return store;
}

void WeightStore::replace_with_views(const std::vector<std::string>& replaced,
                                     std::vector<TensorView> views,
                                     std::shared_ptr<const void> keep) {
  keep_.push_back(std::move(keep));
  for (const std::string& name : replaced) index_.erase(name);
  for (TensorView& v : views) {
    views_.push_back(std::make_unique<TensorView>(std::move(v)));
    const TensorView* view = views_.back().get();
    if (!index_.emplace(view->name, view).second) {
      fail(ErrorCode::kCorrupt, "tensor '" + view->name + "' appears twice in " + where_);
    }
  }
}

}  // namespace qvl
