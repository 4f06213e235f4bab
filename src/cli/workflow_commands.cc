// Workflows from the command line (docs/workflows.md): `submit` of a
// `kind: Workflow` manifest, `status`/`cancel` of a workflow id, `workflows`.
#include <chrono>
#include <iostream>
#include <thread>

#include "cli/support.h"
#include "cli/workflow_tree.h"
#include "common/grpc_status.h"
#include "manifest/workflow.h"
#include "workflow/plan.h"

namespace idlegrid::cli {
namespace {

constexpr int kPollMs = 500;  // no server stream for workflows: --wait polls

Result<v1::Workflow> FetchWorkflow(Client& client, const std::string& id) {
  v1::GetWorkflowRequest req;
  req.set_workflow_id(id);
  v1::Workflow wf;
  auto ctx = client.Context();
  IG_RETURN_IF_ERROR(FromGrpc(client.stub()->GetWorkflow(ctx.get(), req, &wf)));
  return wf;
}

Result<v1::Workflow> WaitWorkflow(Client& client, const std::string& id) {
  while (true) {
    IG_ASSIGN_OR_RETURN(v1::Workflow wf, FetchWorkflow(client, id));
    bool settled = wf.state() != workflow::kRunning;
    for (const auto& s : wf.steps()) settled = settled && workflow::IsDone(s.state());
    if (settled) return wf;
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
}

int PrintWorkflow(const CommonFlags& f, const v1::Workflow& wf, bool exit_by_state) {
  if (f.json)
    PrintJson(wf);
  else
    std::cout << WorkflowTree(wf);
  return exit_by_state && wf.state() != workflow::kSucceeded ? 1 : 0;
}

}  // namespace

bool IsWorkflowId(const std::string& id) { return id.starts_with("w-"); }

Result<bool> IsWorkflowFile(const std::string& path) {
  IG_ASSIGN_OR_RETURN(std::string text, manifest::ReadManifestText(path));
  return manifest::IsWorkflowManifest(text);
}

int WorkflowValidate(const CommonFlags& f, const std::string& path) {
  auto spec = manifest::LoadWorkflowFile(path);
  if (!spec.ok()) return Fail(spec.status());
  if (f.json)
    PrintJson(*spec);
  else
    std::cout << path << ": ok (workflow of " << spec->steps_size() << " steps)\n";
  return 0;
}

int WorkflowSubmit(const CommonFlags& f, const std::string& path, bool wait) {
  auto spec = manifest::LoadWorkflowFile(path);
  if (!spec.ok()) return Fail(spec.status());
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::SubmitWorkflowRequest req;
  *req.mutable_spec() = *spec;
  v1::Workflow wf;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->SubmitWorkflow(ctx.get(), req, &wf));
  if (!st.ok()) return Fail(st);
  if (!wait) {
    if (f.json)
      PrintJson(wf);
    else
      std::cout << wf.id() << "\n";
    return 0;
  }
  if (!f.json) std::cerr << "submitted " << wf.id() << "\n";
  auto done = WaitWorkflow(**client, wf.id());
  if (!done.ok()) return Fail(done.status());
  return PrintWorkflow(f, *done, true);
}

int WorkflowStatus(const CommonFlags& f, const std::string& id, bool wait) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  auto wf = wait ? WaitWorkflow(**client, id) : FetchWorkflow(**client, id);
  if (!wf.ok()) return Fail(wf.status());
  return PrintWorkflow(f, *wf, wait);
}

int WorkflowCancel(const CommonFlags& f, const std::string& id) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::GetWorkflowRequest req;
  req.set_workflow_id(id);
  v1::Workflow wf;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->CancelWorkflow(ctx.get(), req, &wf));
  if (!st.ok()) return Fail(st);
  return PrintWorkflow(f, wf, false);
}

int Workflows(const CommonFlags& f) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::ListWorkflowsResponse resp;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->ListWorkflows(ctx.get(), v1::ListWorkflowsRequest(), &resp));
  if (!st.ok()) return Fail(st);
  if (f.json) {
    PrintJson(resp);
    return 0;
  }
  for (const auto& wf : resp.workflows()) {
    int done = 0;
    for (const auto& s : wf.steps()) done += workflow::IsDone(s.state()) ? 1 : 0;
    std::cout << wf.id() << "  " << wf.spec().name() << "  " << wf.state() << " (" << done << "/" << wf.steps_size()
              << " steps done)\n";
  }
  return 0;
}

}  // namespace idlegrid::cli
