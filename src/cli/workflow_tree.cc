#include "cli/workflow_tree.h"

#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "manifest/workflow.h"

namespace idlegrid::cli {
namespace {

struct Drawer {
  std::map<std::string, const v1::WorkflowStep*> rows;
  std::map<std::string, std::vector<std::string>> children;  // step -> its dependants, in spec order
  std::set<std::string> drawn;
  std::ostringstream out;

  std::string Line(const std::string& name) const {
    auto it = rows.find(name);
    if (it == rows.end()) return name + "  waiting";
    const v1::WorkflowStep& s = *it->second;
    std::string line = name + "  " + (s.state().empty() ? "waiting" : s.state());
    if (!s.job_id().empty()) line += "  " + s.job_id();
    if (s.cached()) line += " (cached)";
    if (!s.message().empty() && s.state() != "succeeded") line += ": " + s.message();
    return line;
  }

  void Draw(const std::string& name, const std::string& prefix, const std::string& branch, const std::string& below) {
    if (drawn.contains(name)) {
      out << prefix << branch << name << "  (above)\n";
      return;
    }
    drawn.insert(name);
    out << prefix << branch << Line(name) << "\n";
    const auto& kids = children[name];
    for (size_t i = 0; i < kids.size(); ++i) {
      const bool last = i + 1 == kids.size();
      Draw(kids[i], prefix + below, last ? "└─ " : "├─ ", last ? "   " : "│  ");
    }
  }
};

}  // namespace

std::string WorkflowTree(const v1::Workflow& wf) {
  Drawer d;
  for (const v1::WorkflowStep& s : wf.steps()) d.rows[s.name()] = &s;
  std::vector<std::string> roots;
  for (const v1::WorkflowStepSpec& s : wf.spec().steps()) {
    const std::vector<std::string> deps = manifest::DependenciesOf(s);
    if (deps.empty()) roots.push_back(s.name());
    for (const std::string& dep : deps) d.children[dep].push_back(s.name());
  }
  d.out << "workflow " << wf.id() << " " << wf.spec().name() << ": " << wf.state()
        << " (onFailure: " << (wf.spec().on_failure().empty() ? "stop" : wf.spec().on_failure()) << ")\n";
  for (const std::string& root : roots) d.Draw(root, "", "", "");
  return d.out.str();
}

}  // namespace idlegrid::cli
