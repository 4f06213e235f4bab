// `idlegrid provider earnings` (docs/provider.md, Earnings).
#include <iostream>

#include "cli/commands.h"
#include "cli/support.h"
#include "common/grpc_status.h"
#include "market/earnings.h"

namespace idlegrid::cli {

int ProviderEarnings(const CommonFlags& f, const std::string& provider) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::ProviderEarningsRequest req;
  req.set_provider(provider);
  v1::ProviderEarningsResponse out;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->ProviderEarnings(ctx.get(), req, &out));
  if (!st.ok()) return Fail(st);
  if (f.json) {
    PrintJson(out);
  } else {
    std::cout << market::FormatEarnings(out);
  }
  return 0;
}

}  // namespace idlegrid::cli
