#include "cli/login.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "agent/join_plan.h"
#include "cli/client.h"
#include "common/fs.h"
#include "common/grpc_status.h"
#include "pki/pki.h"

namespace idlegrid::cli {

namespace {

int Usage(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 2;
}

int Failed(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

// Who the token belongs to, as ListAccounts answers it: the caller's own
// account for a requester or provider, every account for an operator.
Result<std::string> WhoAmI(const ClientConfig& config) {
  IG_ASSIGN_OR_RETURN(auto client, Client::Connect(config));
  v1::ListAccountsResponse out;
  auto ctx = client->Context(15000);
  IG_RETURN_IF_ERROR(FromGrpc(client->stub()->ListAccounts(ctx.get(), v1::ListAccountsRequest(), &out)));
  if (out.accounts_size() == 1) return out.accounts(0).name() + " (" + out.accounts(0).role() + ")";
  return std::string("an operator token");
}

}  // namespace

int Login(const LoginOptions& o) {
  auto address = agent::CoordinatorAddressFromUrl(o.url);
  if (!address.ok()) return Usage(address.status().message());
  if (o.token.empty() || o.ca_hash.empty()) {
    return Usage(
        "login needs --token igt_... and --ca-hash sha256:... (your coordinator's operator gives you "
        "both: the line in the coordinator's DATA_DIR/login.txt, with a token from `idlegrid token create`)");
  }
  const std::string file = o.config_file.empty() ? DefaultConfigFile() : o.config_file;
  if (file.empty()) return Usage("no HOME to keep the config in: give --config FILE");
  if (PathExists(file) && !o.force) {
    return Usage(file + " exists: give --force to replace it, or --config FILE to write another");
  }
  // Trust nothing but the pinned fingerprint, as `agent join` does.
  auto ca = pki::FetchPinnedCa(*address, o.ca_hash);
  if (!ca.ok()) return Failed("the coordinator at " + *address + ": " + ca.status().message());

  // The token is checked with the CA in a private temporary directory:
  // nothing is written where the config goes until both checks passed.
  Result<std::string> who = Status::Internal("no check ran");
  {
    char scratch[] = "/tmp/idlegrid-login.XXXXXX";
    if (::mkdtemp(scratch) == nullptr) return Failed("cannot make a temporary directory in /tmp");
    const std::string probe_ca = std::string(scratch) + "/ca.crt";
    Status st = WriteFileAtomic(probe_ca, *ca, 0600);
    who = st.ok() ? WhoAmI({*address, probe_ca, o.token}) : Result<std::string>(st);
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
  }
  if (!who.ok()) return Failed("the coordinator did not accept the token: " + who.status().message());

  // The CA is named after the config (config.yaml -> config.ca.crt), so a
  // second login with --config never replaces the CA another config uses.
  const std::string dir = std::filesystem::path(file).parent_path().string();
  if (Status st = MakeDirs(dir.empty() ? "." : dir, 0700); !st.ok()) return Failed(st.message());
  const std::string ca_file = std::filesystem::path(file).replace_extension(".ca.crt").string();
  if (Status st = WriteFileAtomic(ca_file, *ca, 0644); !st.ok()) return Failed(st.message());
  const std::string yaml = "# written by idlegrid login; your API token, keep private\naddress: " + *address +
                           "\nca_file: " + ca_file + "\ntoken: " + o.token + "\n";
  if (Status st = WriteFileAtomic(file, yaml, 0600); !st.ok()) return Failed(st.message());
  std::printf("logged in to %s as %s; CA pinned in %s; config %s\n", address->c_str(), who->c_str(), ca_file.c_str(),
              file.c_str());
  return 0;
}

}  // namespace idlegrid::cli
