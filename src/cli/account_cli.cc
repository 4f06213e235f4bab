// Accounts and money: account, token, ledger, provider, join-token; and
// delete (account_commands.cc, ledger_commands.cc, provider_commands.cc).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cli/command_groups.h"
#include "cli/commands.h"

namespace idlegrid::cli {
namespace {

struct AccountGroupFlags {
  AccountFlags account;
  std::string token_account, expires, token_name, token_id;
  std::vector<std::string> scopes;
  std::string ledger_account, ledger_amount;
  int64_t ledger_after = 0;
  uint32_t ledger_limit = 0;
  bool unstake = false;
  std::string earnings_provider;
  std::string job_id;
};

// account (create, list) and token (create, list, revoke).
void AddAccountAndTokenCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common,
                                const std::shared_ptr<AccountGroupFlags>& f) {
  auto* accounts = app.add_subcommand("account", "manage accounts (operators)");
  accounts->require_subcommand(1);
  auto* acreate = accounts->add_subcommand("create", "create an account");
  acreate->add_option("name", f->account.name)->required();
  acreate->add_option("--role", f->account.role, "requester | provider | operator")->required();
  acreate->add_option("--weight", f->account.weight, "fair-share weight")->capture_default_str();
  acreate->add_option("--max-queued", f->account.max_queued_tasks, "queued-task quota (0: the coordinator's default)");
  acreate->add_option("--max-running", f->account.max_running_tasks, "running-task quota (0: the default)");
  acreate->add_option("--max-stored-bytes", f->account.max_stored_bytes, "stored-bytes quota (0: the default)");
  AddClientFlags(acreate, common);
  auto* alist = accounts->add_subcommand("list", "list accounts with their use and quotas");
  AddClientFlags(alist, common);
  auto* token = app.add_subcommand("token", "manage API tokens");
  token->require_subcommand(1);
  auto* tcreate = token->add_subcommand("create", "mint an API token (shown once)");
  tcreate->add_option("--account", f->token_account, "whose (default: your own)");
  tcreate->add_option("--scope", f->scopes, "submit,read,cancel,drain (default: all the role allows)")->delimiter(',');
  tcreate->add_option("--expires", f->expires, "e.g. 30d, 12h (default: never)");
  tcreate->add_option("--name", f->token_name, "a label for token list");
  AddClientFlags(tcreate, common);
  auto* tlist = token->add_subcommand("list", "list tokens (never their secrets)");
  tlist->add_option("--account", f->token_account);
  AddClientFlags(tlist, common);
  auto* trevoke = token->add_subcommand("revoke", "revoke a token by id");
  trevoke->add_option("id", f->token_id)->required();
  AddClientFlags(trevoke, common);

  reg.Add(acreate, [f, &common] { return AccountCreate(common, f->account); });
  reg.Add(alist, [&common] { return AccountList(common); });
  reg.Add(tcreate,
          [f, &common] { return TokenCreate(common, f->token_account, f->scopes, f->expires, f->token_name); });
  reg.Add(tlist, [f, &common] { return TokenList(common, f->token_account); });
  reg.Add(trevoke, [f, &common] { return TokenRevoke(common, f->token_id); });
}

// ledger: balance, history, deposit, withdraw, stake (docs/ledger.md).
void AddLedgerCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common,
                       const std::shared_ptr<AccountGroupFlags>& f) {
  auto* ledger_cmd = app.add_subcommand("ledger", "balances, history, deposits and stakes (docs/ledger.md)");
  ledger_cmd->require_subcommand(1);
  auto* lbalance = ledger_cmd->add_subcommand("balance", "an account's balances (default: your own)");
  lbalance->add_option("--account", f->ledger_account);
  AddClientFlags(lbalance, common);
  auto* lhistory = ledger_cmd->add_subcommand("history", "an account's postings, oldest first");
  lhistory->add_option("--account", f->ledger_account);
  lhistory->add_option("--after", f->ledger_after, "only postings after this seq");
  lhistory->add_option("--limit", f->ledger_limit, "at most this many (default 100)");
  AddClientFlags(lhistory, common);
  auto* ldeposit = ledger_cmd->add_subcommand("deposit", "credit an account from outside the grid (operators)");
  ldeposit->add_option("account", f->ledger_account)->required();
  ldeposit->add_option("amount", f->ledger_amount, "credits, e.g. 12.5")->required();
  AddClientFlags(ldeposit, common);
  auto* lwithdraw = ledger_cmd->add_subcommand("withdraw", "pay an account's credits out of the grid (operators)");
  lwithdraw->add_option("account", f->ledger_account)->required();
  lwithdraw->add_option("amount", f->ledger_amount, "credits, e.g. 12.5")->required();
  AddClientFlags(lwithdraw, common);
  auto* lstake = ledger_cmd->add_subcommand("stake", "stake available credits (providers), or --unstake them");
  lstake->add_option("amount", f->ledger_amount, "credits, e.g. 12.5")->required();
  lstake->add_option("--account", f->ledger_account, "whose (default: your own)");
  lstake->add_flag("--unstake", f->unstake, "move stake back to available");
  AddClientFlags(lstake, common);

  reg.Add(lbalance, [f, &common] { return LedgerBalance(common, f->ledger_account); });
  reg.Add(lhistory,
          [f, &common] { return LedgerHistory(common, f->ledger_account, f->ledger_after, f->ledger_limit); });
  reg.Add(ldeposit, [f, &common] { return LedgerTransfer(common, f->ledger_account, f->ledger_amount, true); });
  reg.Add(lwithdraw, [f, &common] { return LedgerTransfer(common, f->ledger_account, f->ledger_amount, false); });
  reg.Add(lstake, [f, &common] { return LedgerStake(common, f->ledger_account, f->ledger_amount, f->unstake); });
}

// provider earnings, join-token create (docs/provider.md), delete.
void AddProviderAndDeleteCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common,
                                  const std::shared_ptr<AccountGroupFlags>& f) {
  auto* provider_cmd = app.add_subcommand("provider", "a provider's side: what its nodes earned (docs/provider.md)");
  provider_cmd->require_subcommand(1);
  auto* pearnings = provider_cmd->add_subcommand(
      "earnings", "metered, accepted work of your nodes, ledger balances and an estimate per hour at your asks");
  pearnings->add_option("--provider", f->earnings_provider, "whose (default: your own; operators may name any)");
  AddClientFlags(pearnings, common);
  auto* join = app.add_subcommand("join-token", "manage node join tokens");
  join->require_subcommand(1);
  auto* jcreate = join->add_subcommand("create", "mint a join token for a provider account");
  jcreate->add_option("--provider", f->token_account, "the provider account (default: your own)");
  jcreate->add_option("--expires", f->expires, "e.g. 7d (default: never)");
  AddClientFlags(jcreate, common);
  auto* del = app.add_subcommand("delete", "delete a finished job, its logs and the artifacts only it held");
  del->add_option("job", f->job_id)->required();
  AddClientFlags(del, common);

  reg.Add(pearnings, [f, &common] { return ProviderEarnings(common, f->earnings_provider); });
  reg.Add(jcreate, [f, &common] { return JoinTokenCreate(common, f->token_account, f->expires); });
  reg.Add(del, [f, &common] { return Delete(common, f->job_id); });
}

}  // namespace

void RegisterAccountCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common) {
  auto f = std::make_shared<AccountGroupFlags>();
  AddAccountAndTokenCommands(app, reg, common, f);
  AddLedgerCommands(app, reg, common, f);
  AddProviderAndDeleteCommands(app, reg, common, f);
}

}  // namespace idlegrid::cli
