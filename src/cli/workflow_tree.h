#pragma once
// `idlegrid status WF`: a workflow's steps drawn as a tree, each under the
// steps it depends on. A step with several dependencies (a fan-in) is drawn
// in full under the first and named again under the others. Pure.
#include <string>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::cli {

// Lines like
//   workflow w-1a2b3c diamond: running (onFailure: stop)
//   a  succeeded  j-aaaaaa (cached)
//   ├─ b  running  j-bbbbbb
//   │  └─ d  waiting
//   └─ c  failed  j-cccccc: job j-cccccc task 0 nonzero_exit
//      └─ d  (above)
std::string WorkflowTree(const v1::Workflow& workflow);

}  // namespace idlegrid::cli
