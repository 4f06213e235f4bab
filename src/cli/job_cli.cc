// Jobs and what runs them: submit, validate, status, market, jobs, workflows,
// nodes, logs, fetch; and cancel, retry, abandon (commands.cc,
// workflow_commands.cc).
#include <memory>
#include <string>

#include "cli/command_groups.h"
#include "cli/commands.h"

namespace idlegrid::cli {
namespace {

struct JobFlags {
  std::string manifest, job_id, dir;
  bool wait = false, follow = false, explain = false, details = false;
  std::string node_id, deadline, page_token;
  uint32_t attempts_limit = 0;
  ShowFlags show;  // which tasks `status` lists, which output `logs` prints
};

// submit, validate, status, market, jobs, workflows.
void AddJobQueryCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common, const std::shared_ptr<JobFlags>& f) {
  auto* submit = app.add_subcommand("submit", "submit a job manifest, or a workflow (kind: Workflow)");
  submit->add_option("manifest", f->manifest, "job or workflow manifest YAML")->required();
  submit->add_flag("--wait", f->wait, "follow progress until the job (or workflow) ends");
  AddClientFlags(submit, common);
  auto* validate = app.add_subcommand("validate", "check a job manifest without submitting it");
  validate->add_option("manifest", f->manifest)->required();
  validate->add_flag("--json", common.json);
  auto* status = app.add_subcommand("status", "show a job, or a workflow (w-...) as a tree of its steps");
  status->add_option("job", f->job_id, "job id, or workflow id")->required();
  status->add_flag("--wait", f->wait, "wait until the job ends");
  status->add_flag("--explain", f->explain,
                   "why its queued tasks wait, grouped by reason: nodes per filter, best candidates' scores");
  status->add_option("--tasks", f->show.tasks.indices, "list these task indices, e.g. 3,7-9");
  status->add_option("--state", f->show.tasks.states, "list tasks in these states (e.g. failed,running; repeatable)")
      ->allow_extra_args(false);
  status->add_option("--limit", f->show.limit, "list at most this many tasks (default 50 when listing)");
  status->add_flag("--all", f->show.all, "list every task (a job of more than 20 tasks shows its summary only)");
  AddClientFlags(status, common);
  auto* market = app.add_subcommand("market", "the spot market's order book (free units and asks per device class)");
  AddClientFlags(market, common);
  auto* jobs = app.add_subcommand("jobs", "list jobs");
  AddClientFlags(jobs, common);
  auto* workflows = app.add_subcommand("workflows", "list workflows (docs/workflows.md)");
  AddClientFlags(workflows, common);

  reg.Add(submit, [f, &common] { return Submit(common, f->manifest, f->wait); });
  reg.Add(validate, [f, &common] { return Validate(common, f->manifest); });
  reg.Add(status, [f, &common] {
    if (f->explain) return Explain(common, f->job_id);
    return Status_(common, f->job_id, f->wait, f->show);
  });
  reg.Add(market, [&common] { return Market(common); });
  reg.Add(jobs, [&common] { return Jobs(common); });
  reg.Add(workflows, [&common] { return Workflows(common); });
}

// nodes (drain, undrain), logs, fetch.
void AddNodeAndOutputCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common,
                              const std::shared_ptr<JobFlags>& f) {
  auto* nodes = app.add_subcommand("nodes", "list nodes (a table; --details: everything); drain or undrain one");
  nodes->add_flag("--details", f->details,
                  "each node in full: benchmarks, limits, reliability, handshake, pause, asks, GPUs");
  AddClientFlags(nodes, common);
  auto* drain = nodes->add_subcommand("drain", "take no new work; at --deadline, hand running work back");
  drain->add_option("node", f->node_id)->required();
  drain->add_option("--deadline", f->deadline, "e.g. 90s, 10m (default: let running work finish)");
  AddClientFlags(drain, common);
  auto* undrain = nodes->add_subcommand("undrain", "take work again");
  undrain->add_option("node", f->node_id)->required();
  AddClientFlags(undrain, common);
  auto* attempts =
      nodes->add_subcommand("attempts", "what ran on a node, newest first (its provider's and operators')");
  attempts->add_option("node", f->node_id)->required();
  attempts->add_option("--limit", f->attempts_limit, "attempts a page (default 50, at most 500)");
  attempts->add_option("--page", f->page_token, "the older page a previous page named");
  AddClientFlags(attempts, common);
  auto* logs = app.add_subcommand("logs", "print a job's output");
  logs->add_option("job", f->job_id)->required();
  logs->add_flag("-f,--follow", f->follow, "keep streaming until the job ends");
  logs->add_option("--task,--tasks", f->show.tasks.indices, "only these tasks' output, e.g. 3 or 3,7-9");
  logs->add_option("--stream", f->show.stream, "only stdout or only stderr");
  AddClientFlags(logs, common);
  auto* fetch = app.add_subcommand("fetch", "download a job's outputs, verifying digests");
  fetch->add_option("job", f->job_id)->required();
  fetch->add_option("dir", f->dir)->required();
  AddClientFlags(fetch, common);

  reg.Add(drain, [f, &common] { return Drain(common, f->node_id, f->deadline, false); });
  reg.Add(undrain, [f, &common] { return Drain(common, f->node_id, "", true); });
  reg.Add(attempts, [f, &common] { return NodeAttempts(common, f->node_id, f->attempts_limit, f->page_token); });
  reg.Add(nodes, [&common, f] { return Nodes(common, f->details); });
  reg.Add(logs, [f, &common] { return Logs(common, f->job_id, f->follow, f->show); });
  reg.Add(fetch, [f, &common] { return Fetch(common, f->job_id, f->dir); });
}

struct JobControlFlags {
  std::string job_id;
  TaskFlags task_flags;
  bool retry_failed = false;
};

}  // namespace

void RegisterJobCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common) {
  auto f = std::make_shared<JobFlags>();
  AddJobQueryCommands(app, reg, common, f);
  AddNodeAndOutputCommands(app, reg, common, f);
}

void RegisterJobControlCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common) {
  auto f = std::make_shared<JobControlFlags>();
  auto* cancel = app.add_subcommand("cancel", "cancel a job, or some of its tasks, or a workflow (w-...)");
  cancel->add_option("job", f->job_id)->required();
  cancel->add_option("--tasks", f->task_flags.indices, "only these task indices, e.g. 3,7-9");
  cancel
      ->add_option("--state", f->task_flags.states,
                   "only tasks in these states (queued,assigned,running,lost; repeatable)")
      ->allow_extra_args(false);
  AddClientFlags(cancel, common);
  auto* retry = app.add_subcommand(
      "retry",
      "run a job's failed tasks (--failed) or listed tasks (--tasks) again; alone: its tasks lost with their node");
  retry->add_option("job", f->job_id)->required();
  retry->add_flag("--failed", f->retry_failed, "every failed task, with a fresh attempt");
  retry->add_option("--tasks", f->task_flags.indices, "these failed or cancelled task indices, e.g. 3,7-9");
  AddClientFlags(retry, common);
  auto* abandon = app.add_subcommand("abandon", "give up a job's tasks lost with their node (they fail)");
  abandon->add_option("job", f->job_id)->required();
  AddClientFlags(abandon, common);

  reg.Add(cancel, [f, &common] { return Cancel(common, f->job_id, f->task_flags); });
  reg.Add(retry, [f, &common] {
    if (f->retry_failed || !f->task_flags.indices.empty()) {
      return Retry(common, f->job_id, f->task_flags, f->retry_failed);
    }
    return ResolveLost(common, f->job_id, true);
  });
  reg.Add(abandon, [f, &common] { return ResolveLost(common, f->job_id, false); });
}

}  // namespace idlegrid::cli
