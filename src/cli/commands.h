#pragma once
// Client subcommands. Each returns the process exit code:
// 0 ok, 1 the operation failed, 2 invalid input or usage.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/image_build.h"

namespace idlegrid::cli {

struct CommonFlags {
  ClientConfig config;
  std::string config_file;
  bool json = false;
};

int Submit(const CommonFlags& f, const std::string& manifest_path, bool wait);

// Workflows (workflow_commands.cc, docs/workflows.md). `submit`, `status`,
// `cancel` and `validate` hand workflow manifests and ids ("w-...") to these.
bool IsWorkflowId(const std::string& id);
Result<bool> IsWorkflowFile(const std::string& path);
int WorkflowSubmit(const CommonFlags& f, const std::string& manifest_path, bool wait);
// The steps as a tree (cli/workflow_tree.h), or the Workflow with --json;
// with `wait`, once every step is done (exit 1 unless it succeeded).
int WorkflowStatus(const CommonFlags& f, const std::string& workflow_id, bool wait);
int WorkflowCancel(const CommonFlags& f, const std::string& workflow_id);
int WorkflowValidate(const CommonFlags& f, const std::string& manifest_path);
int Workflows(const CommonFlags& f);
struct ShowFlags;
// A job's first line, progress and summary; its tasks when it has few or
// when `show` asks (cli/job_view.h).
int Status_(const CommonFlags& f, const std::string& job_id, bool wait, const ShowFlags& show);
int Jobs(const CommonFlags& f);
// Why the job's queued tasks wait: filter counts and candidates' scores.
int Explain(const CommonFlags& f, const std::string& job_id);
// The spot market's order book.
int Market(const CommonFlags& f);
// `provider earnings`: what a provider's nodes earned (metered, accepted work
// and, with a ledger, its balances) and an estimate per hour at its asks.
int ProviderEarnings(const CommonFlags& f, const std::string& provider);
// A table of the nodes; with `details`, each node in full.
int Nodes(const CommonFlags& f, bool details);
int Drain(const CommonFlags& f, const std::string& node_id, const std::string& deadline, bool undo);
// `nodes attempts`: a page of what ran on the node, newest first (node_attempts.cc).
int NodeAttempts(const CommonFlags& f, const std::string& node_id, uint32_t limit, const std::string& page_token);
// The job's output; with `show.tasks.indices`, those tasks', with
// `show.stream`, one stream; "[task N] " before each line when several
// tasks' output is shown (cli/log_lines.h).
int Logs(const CommonFlags& f, const std::string& job_id, bool follow, const ShowFlags& show);
int Fetch(const CommonFlags& f, const std::string& job_id, const std::string& dir);
// Which tasks `cancel` and `retry` touch: indices as "3,7-9" and state
// names (repeated or comma lists), parsed by jobs/task_ranges.h.
struct TaskFlags {
  std::string indices;
  std::vector<std::string> states;
};
// What `status` lists and `logs` prints: the tasks (indices, states), how
// many at most (`limit`, 0: the default; `all`: no limit), one stream.
struct ShowFlags {
  TaskFlags tasks;
  int limit = 0;
  bool all = false;
  std::string stream;
};
// Without indices or states, the whole job; else only the tasks matching both.
int Cancel(const CommonFlags& f, const std::string& job_id, const TaskFlags& tasks = {});
// Runs the job's failed tasks (`failed`) and/or the listed failed or
// cancelled ones again (RetryJob); `tasks.states` is not used.
int Retry(const CommonFlags& f, const std::string& job_id, const TaskFlags& tasks, bool failed);
// The user's decision for tasks lost with their node: run again, or fail them.
int ResolveLost(const CommonFlags& f, const std::string& job_id, bool retry);
// `make_public`: every account may use it (else only the pusher's account).
// `sign_key`: a secret-key file; the pushed image is then signed with it, as
// by ImageSign (the key is read before anything is uploaded).
int ImagePush(const CommonFlags& f, const std::string& archive, bool make_public, const std::string& sign_key = "");
// image_signing.cc. Writes NAME.key (mode 0600) and NAME.pub, refusing to
// overwrite either; prints the public-key line.
int ImageKeygen(const std::string& name);
// Signs an image with a secret-key file and adds the signature to the
// coordinator (which verifies it, and takes it only for an image this
// account may use).
int ImageSign(const CommonFlags& f, const std::string& image, const std::string& key_file);
// Builds DIR with podman (cli/image_build.h), then pushes it as ImagePush does
// and removes the local image and archive.
int ImageBuild(const CommonFlags& f, const ImageBuildOptions& options);
int ArtifactPush(const CommonFlags& f, const std::string& file, bool make_public);

// --- receipts (receipt_commands.cc; docs/receipts.md) ---
struct ReceiptQuery {
  std::string job_id;
  std::optional<uint32_t> task_index;
  std::string attempt_id;
  std::string output_file;  // saved there as JSON when set
};
// Fetches an attempt's signed receipt; prints it (JSON with --json) and/or
// saves it.
int Receipt(const CommonFlags& f, const ReceiptQuery& q);
// Verifies a saved receipt offline against the pinned coordinator key (the
// fingerprint given, else the client config's receipt_key_fingerprint);
// prints what it checked. Exit 1 with the reason when it does not verify,
// 2 when the file or fingerprint is malformed.
int ReceiptVerify(const CommonFlags& f, const std::string& file, const std::string& fingerprint);

// --- accounts and credentials (operators; an account manages its own tokens) ---
struct AccountFlags {
  std::string name;
  std::string role;
  double weight = 1;
  uint32_t max_queued_tasks = 0;
  uint32_t max_running_tasks = 0;
  uint64_t max_stored_bytes = 0;
};
int AccountCreate(const CommonFlags& f, const AccountFlags& account);
int AccountList(const CommonFlags& f);
// Prints the secret on stdout (once) and what it is on stderr.
int TokenCreate(const CommonFlags& f, const std::string& account, const std::vector<std::string>& scopes,
                const std::string& expires, const std::string& name);
int TokenList(const CommonFlags& f, const std::string& account);
int TokenRevoke(const CommonFlags& f, const std::string& token_id);
int JoinTokenCreate(const CommonFlags& f, const std::string& provider, const std::string& expires);
// Removes a settled job, its logs and the artifacts only it held.
int Delete(const CommonFlags& f, const std::string& job_id);

// --- the ledger (docs/ledger.md; a coordinator started with --ledger) ---
// Amounts are credits as text ("12.5", at most six decimals). `account` ""
// is the caller's own.
int LedgerBalance(const CommonFlags& f, const std::string& account);
int LedgerHistory(const CommonFlags& f, const std::string& account, int64_t after_seq, uint32_t limit);
// Operators: money into (deposit) or out of (withdraw) an account.
int LedgerTransfer(const CommonFlags& f, const std::string& account, const std::string& amount, bool deposit);
// Providers: stake (or unstake) their own available credits.
int LedgerStake(const CommonFlags& f, const std::string& account, const std::string& amount, bool unstake);

// Human-readable summary of an advertisement (`agent --discover`).
void PrintAdvertisement(const v1::Advertisement& ad);

// Validates a manifest without a coordinator (prints the parsed spec).
int Validate(const CommonFlags& f, const std::string& manifest_path);

}  // namespace idlegrid::cli
