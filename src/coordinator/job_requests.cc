// What requesters may ask of their jobs (job_requests.h).
#include "coordinator/job_requests.h"

#include <spdlog/spdlog.h>

#include "common/random.h"
#include "jobs/lease.h"
#include "jobs/task_page.h"
#include "jobs/task_state.h"
#include "jobs/task_select.h"
#include "manifest/image_ref.h"
#include "manifest/items.h"
#include "manifest/manifest.h"
#include "sched/data_class.h"

namespace idlegrid::coordinator {
namespace {

// Where `digest` is an input of `spec`, for an error: its path, and with
// placeholders the first item that names it.
std::string InputUsePlace(const v1::JobSpec& spec, const std::string& digest) {
  if (!manifest::InputsUsePlaceholders(spec) || spec.items_size() == 0) {
    for (const auto& input : spec.inputs()) {
      if (input.artifact() == digest) return input.path();
    }
    return "an input";
  }
  for (int i = 0; i < spec.items_size(); ++i) {
    for (const v1::InputSpec& input : manifest::InputsForTask(spec, static_cast<uint32_t>(i))) {
      if (input.artifact() == digest) return input.path() + " of array.items[" + std::to_string(i) + "]";
    }
  }
  return "an input";
}

}  // namespace

JobRequests::JobRequests(store::Store* store, artifacts::ArtifactStore* artifacts, ImageCatalog* images,
                         Tenancy* tenancy, VerificationService* verification, LedgerShell* ledger,
                         RetentionSweeper* retention, const Clock* clock, Settings settings, Hooks hooks)
    : store_(store),
      artifacts_(artifacts),
      images_(images),
      tenancy_(tenancy),
      verification_(verification),
      ledger_(ledger),
      retention_(retention),
      clock_(clock),
      settings_(std::move(settings)),
      hooks_(std::move(hooks)) {}

Result<v1::Job> JobRequests::Submit(const v1::SubmitJobRequest& request, const std::string& account) {
  IG_ASSIGN_OR_RETURN(PreparedJob job, Prepare(request.spec(), account));
  return Store(job, NewId("j"), account);
}

Result<JobRequests::PreparedJob> JobRequests::Prepare(v1::JobSpec spec, const std::string& account) {
  if (!spec.pinned_node().empty() || spec.readiness() || !spec.pinned_device().empty() || spec.has_registry_image()) {
    return Status::InvalidArgument(
        "spec.pinned_node, spec.pinned_device, spec.readiness and spec.registry_image are set by the coordinator only");
  }
  manifest::ApplyDefaults(&spec);
  if (spec.retention_seconds() == 0) spec.set_retention_seconds(settings_.default_retention_seconds);
  IG_RETURN_IF_ERROR(manifest::ValidateJobSpec(spec));
  if (!spec.callback_url().empty()) {
    IG_RETURN_IF_ERROR(hooks_.prepare_callback(&spec).WithContext("spec.callback_url"));
  } else if (!spec.callback_secret().empty()) {
    return Status::InvalidArgument("spec.callback_secret: names no callback_url to sign for");
  }
  IG_RETURN_IF_ERROR(verification_->Resolve(&spec));
  IG_RETURN_IF_ERROR(tenancy_->CheckSubmitQuota(account, spec.array_count() == 0 ? 1 : spec.array_count()));
  // The class is stamped now: a job's data stays as sensitive as it was
  // when submitted, whatever default the policy names later.
  const std::shared_ptr<const sched::DataPolicy> data = hooks_.data_policy();
  if (spec.data_class().empty()) spec.set_data_class(data->default_class);
  IG_RETURN_IF_ERROR(sched::CheckDataClass(*data, spec));
  if (!spec.policy().empty() && settings_.policies.policies.count(spec.policy()) == 0) {
    // Refused now, not left waiting out its queue timeout.
    return Status::InvalidArgument("spec.policy: " + sched::UnknownPolicy(spec.policy(), settings_.policies));
  }
  IG_ASSIGN_OR_RETURN(manifest::ImageRef image_ref, manifest::ParseImageRef(spec.image()));
  std::string image_archive;  // a pushed image's archive, which the job holds; none from a registry
  if (image_ref.from_registry()) {
    IG_RETURN_IF_ERROR(images_->PinRegistryImage(image_ref, &spec));
  } else {
    IG_ASSIGN_OR_RETURN(auto image, images_->UsableImage(image_ref.digest, account));
    if (!image) {
      return Status::FailedPrecondition("image " + image_ref.digest +
                                        " is not in this coordinator's store; push it first with "
                                        "`idlegrid image push ARCHIVE.tar`");
    }
    image_archive = image->archive_digest;
  }
  // A registry image is judged by the digest it was pinned to above.
  IG_RETURN_IF_ERROR(images_->CheckTrusted(manifest::ImageDigestOf(spec.image())));
  // Every task's inputs: with placeholders, each item names its own shard.
  for (const std::string& digest : manifest::InputArtifacts(spec)) {
    IG_ASSIGN_OR_RETURN(bool usable, MayUse(*store_, account, digest));
    if (!usable || !artifacts_->Has(digest)) {
      return Status::FailedPrecondition("input artifact " + digest + " (for " + InputUsePlace(spec, digest) +
                                        ") is not in this coordinator's store; upload it first");
    }
  }
  return PreparedJob{std::move(spec), std::move(image_archive)};
}

Result<v1::Job> JobRequests::Store(const PreparedJob& job, const std::string& job_id, const std::string& account) {
  const v1::JobSpec& spec = job.spec;
  const std::string& image_archive = job.image_archive;
  if (ledger_) {
    // Escrow before the job exists, so nothing runs unfunded; given back if
    // the job cannot be stored.
    IG_ASSIGN_OR_RETURN(ledger::Micros cost_cap, CostCapOf(spec));
    IG_RETURN_IF_ERROR(ledger_->EscrowAtSubmit(account, job_id, cost_cap, clock_->NowMs()));
  }
  // Recorded before the job, so no job ends with its callback unrecorded (a
  // callback whose job was never stored fails as deleted).
  if (!spec.callback_url().empty()) IG_RETURN_IF_ERROR(hooks_.register_callback(job_id, spec));
  // The digest an attempt's provenance names its spec by (the agent hashes
  // the spec it is sent the same way).
  if (Status st = store_->CreateJob(job_id, spec, manifest::SpecDigest(spec), clock_->NowMs(), account); !st.ok()) {
    // AlreadyExists: a workflow step's job stored before (the same id, so
    // the escrow above was a replay that changed nothing): it keeps its escrow.
    if (ledger_ && st.code() != Code::kAlreadyExists) {
      if (Status back = ledger_->Unescrow(account, job_id, clock_->NowMs()); !back.ok()) {
        spdlog::error("ledger: escrow of unstored job {} not given back: {}", job_id, back.ToString());
      }
    }
    return st;
  }
  // The job holds its image and inputs while it exists (artifact GC).
  std::vector<store::ArtifactRef> refs;
  if (!image_archive.empty()) refs.push_back({image_archive, "job:" + job_id, account, 0});
  for (const std::string& digest : manifest::InputArtifacts(spec))
    refs.push_back({digest, "job:" + job_id, account, 0});
  if (!refs.empty()) IG_RETURN_IF_ERROR(store_->AddArtifactRefs(refs));
  spdlog::info("job {} submitted by {}: {} task(s) of {}", job_id, account, spec.array_count(), spec.name());
  hooks_.changed();
  return Get(job_id);
}

Result<v1::Job> JobRequests::Get(const v1::GetJobRequest& request) {
  IG_ASSIGN_OR_RETURN(jobs::TaskPage page, jobs::PageOf(request));
  IG_ASSIGN_OR_RETURN(v1::Job job, store_->GetJob(request.job_id()));
  int64_t now = clock_->NowMs();
  *job.mutable_summary() = jobs::Summarize(job, now);
  job.set_settled(jobs::IsSettled(job));
  // Costs and waiting reasons for the tasks that go out only.
  jobs::ApplyPage(page, &job);
  for (auto& task : *job.mutable_tasks()) task.set_cost(jobs::FillCosts(&task, now));
  hooks_.fill_waiting(&job);
  return job;
}

Result<v1::Job> JobRequests::Get(const std::string& job_id) {
  v1::GetJobRequest request;
  request.set_job_id(job_id);
  return Get(request);
}

Result<v1::ListJobsResponse> JobRequests::List(const std::string& account) {
  IG_ASSIGN_OR_RETURN(auto jobs, store_->ListJobs(account));
  v1::ListJobsResponse out;
  for (auto& j : jobs) *out.add_jobs() = std::move(j);
  return out;
}

Result<v1::Job> JobRequests::Cancel(const std::string& job_id) {
  IG_ASSIGN_OR_RETURN(store::CancelResult result, store_->CancelJob(job_id, clock_->NowMs()));
  hooks_.stop_attempts(result.stopped);
  spdlog::info("job {} cancelled; stopping {} attempt(s)", job_id, result.stopped.size());
  hooks_.settle_ledger(job_id);
  hooks_.changed();
  return result.job;
}

Result<v1::Job> JobRequests::Cancel(const v1::CancelJobRequest& request) {
  if (request.task_indices().empty() && request.states().empty()) return Cancel(request.job_id());
  jobs::TaskSelection selection;
  selection.indices.assign(request.task_indices().begin(), request.task_indices().end());
  for (int s : request.states()) selection.states.push_back(static_cast<v1::TaskState>(s));
  IG_ASSIGN_OR_RETURN(store::CancelResult result, store_->CancelTasks(request.job_id(), selection, clock_->NowMs()));
  hooks_.stop_attempts(result.stopped);
  spdlog::info("job {}: tasks cancelled; stopping {} attempt(s)", request.job_id(), result.stopped.size());
  // Refunds only once the job has ended, as a whole cancel does.
  hooks_.settle_ledger(request.job_id());
  hooks_.changed();
  return result.job;
}

Result<v1::Job> JobRequests::Retry(const v1::RetryJobRequest& request) {
  jobs::RetrySelection selection;
  selection.failed = request.failed();
  selection.indices.assign(request.task_indices().begin(), request.task_indices().end());
  const auto requeue = [&]() { return store_->RetryTasks(request.job_id(), selection, clock_->NowMs()); };
  Result<v1::Job> job = Status::Internal("unset");
  if (ledger_) {
    IG_ASSIGN_OR_RETURN(v1::Job before, store_->GetJob(request.job_id()));
    job = ledger_->Requeue(before.account(), request.job_id(), requeue);
  } else {
    job = requeue();
  }
  if (!job.ok()) return job.status();
  spdlog::info("job {}: tasks queued again by the user", request.job_id());
  hooks_.changed();
  return job;
}

Result<v1::DeleteJobResponse> JobRequests::Delete(const std::string& job_id) {
  hooks_.settle_ledger(job_id);  // its escrow comes back before the job goes
  IG_ASSIGN_OR_RETURN(store::CollectedArtifacts gone, store_->DeleteJob(job_id, clock_->NowMs()));
  retention_->Unlink(gone);
  spdlog::info("job {} deleted; {} artifact(s), {} bytes freed", job_id, gone.digests.size(), gone.bytes);
  hooks_.changed();
  v1::DeleteJobResponse out;
  out.set_job_id(job_id);
  out.set_artifacts_removed(static_cast<uint32_t>(gone.digests.size()));
  out.set_bytes_freed(gone.bytes);
  return out;
}

Result<v1::Job> JobRequests::ResolveLost(const v1::ResolveLostRequest& request) {
  IG_ASSIGN_OR_RETURN(v1::Job job, store_->ResolveLost(request.job_id(), request.retry(), clock_->NowMs()));
  spdlog::info("job {}: lost tasks {}", request.job_id(), request.retry() ? "queued again" : "abandoned");
  hooks_.changed();
  return job;
}

Result<std::vector<v1::LogChunk>> JobRequests::ReadLogs(const std::string& job_id, int64_t after_seq, int wait_ms) {
  uint64_t seen = hooks_.version();
  IG_ASSIGN_OR_RETURN(auto chunks, store_->ReadLogs(job_id, after_seq, 500));
  if (chunks.empty() && wait_ms > 0) {
    hooks_.wait_for_change(seen, wait_ms);
    return store_->ReadLogs(job_id, after_seq, 500);
  }
  return chunks;
}

Status JobRequests::CheckJob(const v1::JobSpec& spec, const std::string& account) {
  return Prepare(spec, account).status();
}

Status JobRequests::SubmitJobAs(const v1::JobSpec& spec, const std::string& job_id, const std::string& account) {
  IG_ASSIGN_OR_RETURN(PreparedJob prepared, Prepare(spec, account));
  return Store(prepared, job_id, account).status();
}

Status JobRequests::CancelStepJob(const std::string& job_id) { return Cancel(job_id).status(); }

v1::JobSpec JobRequests::PinStepImage(v1::JobSpec spec) {
  // A registry image named by tag is keyed by the digest the tag names now,
  // so that a moved tag reruns the step, and the step's job runs that
  // digest. When it cannot be resolved, the tag goes on to the submit, which
  // refuses it (or tries again later) with the reason.
  Result<manifest::ImageRef> ref = manifest::ParseImageRef(spec.image());
  if (!ref.ok() || !ref->from_registry() || !ref->digest.empty()) return spec;
  v1::JobSpec pinned = spec;
  if (Status st = images_->PinRegistryImage(*ref, &pinned); !st.ok()) return spec;
  // The submit pins it again, by digest; the tag's record is not kept.
  pinned.clear_registry_image();
  return pinned;
}

}  // namespace idlegrid::coordinator
