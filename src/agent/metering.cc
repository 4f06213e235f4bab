#include "agent/metering.h"

#include <sys/stat.h>

#include <algorithm>

namespace idlegrid::agent {

v1::Metering MeterAttempt(const MeterInputs& in) {
  v1::Metering m;
  const int64_t ran = in.finished_ms - in.started_ms - std::max<int64_t>(in.paused_ms, 0);
  const uint64_t run_ms = ran > 0 ? uint64_t(ran) : 0;
  m.set_run_ms(run_ms);
  const uint64_t share = in.gpu_milli > 0 && in.gpu_milli < 1000 ? in.gpu_milli : 1000;
  m.set_gpu_millis(run_ms * in.gpus * share / 1000);
  m.set_cpu_millis(in.cpu_usec / 1000);
  m.set_cpu_source(in.cpu_source);
  m.set_bytes_in(in.bytes_in);
  m.set_bytes_out(in.bytes_out);
  for (const v1::GpuUsage& g : in.gpu_usage) *m.add_gpus() = g;
  return m;
}

v1::ReceiptStatement BuildStatement(const v1::Assignment& a, const v1::ReportAttemptRequest& exited,
                                    const v1::Metering& metering, int64_t started_ms, int64_t finished_ms) {
  v1::ReceiptStatement s;
  s.set_job_id(a.job_id());
  s.set_task_index(a.task_index());
  s.set_attempt_id(a.attempt_id());
  s.set_lease_epoch(a.lease_epoch());
  s.set_node_id(exited.provenance().node_id());
  s.set_started_at_ms(started_ms);
  s.set_finished_at_ms(finished_ms);
  s.set_exit_code(exited.exit_code());
  *s.mutable_metering() = metering;
  *s.mutable_provenance() = exited.provenance();
  for (const auto& in : a.spec().inputs()) s.add_input_digests(in.artifact());
  *s.mutable_outputs() = exited.outputs();
  return s;
}

Status CountingTransfer::Download(const std::string& digest, const std::string& path) {
  Status st = inner_->Download(digest, path);
  struct stat sb;
  if (st.ok() && ::stat(path.c_str(), &sb) == 0) bytes_in_ += uint64_t(sb.st_size);
  return st;
}

Result<v1::OutputFile> CountingTransfer::Upload(const std::string& path, const std::string& rel) {
  auto file = inner_->Upload(path, rel);
  if (file.ok()) bytes_out_ += file->size();
  return file;
}

}  // namespace idlegrid::agent
