#pragma once
// Layer locality: a node that holds an image's base layers (under another
// image: the researcher's previous build, a colleague's image on the same
// base) fetches only the layers it lacks, so it ranks above a node that
// holds none (scorers.h, ScoreCache). Pure: the layers of an image come from
// the caller's resolver (the coordinator's image catalog).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace idlegrid::sched {

// The layers of the image with this manifest digest; null for an image
// pushed as one archive, or one not known.
using LayerResolver = std::function<std::shared_ptr<const std::vector<ImageLayer>>(const std::string& image)>;

// Sets each task's image_layers, and each node's cached_layers to the layers
// of its cached images that some task's image has (nothing else is ever
// compared). Each image is resolved once per call; nodes holding the same
// images share one set. Nothing is set when no task's image has layers.
void AttachImageLayers(std::vector<NodeView>& nodes, std::vector<TaskView*> tasks, const LayerResolver& resolve);

}  // namespace idlegrid::sched
