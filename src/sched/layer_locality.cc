#include "sched/layer_locality.h"

#include <map>
#include <set>

namespace idlegrid::sched {
namespace {

// Resolves each image once.
class Memo {
 public:
  explicit Memo(const LayerResolver& resolve) : resolve_(resolve) {}
  std::shared_ptr<const std::vector<ImageLayer>> LayersOf(const std::string& image) {
    auto it = known_.find(image);
    if (it == known_.end()) it = known_.emplace(image, image.empty() ? nullptr : resolve_(image)).first;
    return it->second;
  }

 private:
  const LayerResolver& resolve_;
  std::map<std::string, std::shared_ptr<const std::vector<ImageLayer>>> known_;
};

}  // namespace

void AttachImageLayers(std::vector<NodeView>& nodes, std::vector<TaskView*> tasks, const LayerResolver& resolve) {
  Memo memo(resolve);
  std::set<std::string> wanted;
  for (TaskView* t : tasks) {
    t->image_layers = memo.LayersOf(t->image);
    if (!t->image_layers) continue;
    for (const ImageLayer& layer : *t->image_layers) wanted.insert(layer.digest);
  }
  if (wanted.empty()) return;
  // Nodes of one fleet mostly hold the same few images: one set per combination.
  std::map<std::set<std::string>, std::shared_ptr<const std::set<std::string>>> by_images;
  for (NodeView& n : nodes) {
    if (n.cached_images.empty()) continue;
    auto it = by_images.find(n.cached_images);
    if (it == by_images.end()) {
      auto held = std::make_shared<std::set<std::string>>();
      for (const std::string& image : n.cached_images) {
        auto layers = memo.LayersOf(image);
        if (!layers) continue;
        for (const ImageLayer& layer : *layers) {
          if (wanted.count(layer.digest)) held->insert(layer.digest);
        }
      }
      it = by_images.emplace(n.cached_images, held->empty() ? nullptr : std::move(held)).first;
    }
    n.cached_layers = it->second;
  }
}

}  // namespace idlegrid::sched
