#pragma once
// What a provider's nodes earned, and what they could earn per hour
// (docs/provider.md, Earnings). Pure: the coordinator reads the attempts and
// the nodes' offers, this sums them.
//
// Earned is metered, accepted work: SUCCEEDED attempts whose result was
// accepted (jobs::IsAcceptedResult: not a wrong or still-pending vote), at
// the price their placement recorded times the time they ran
// (jobs::AttemptCost). With a ledger the money itself is in the provider's
// pending and available balances; the metered figure is what the work was
// worth at placement, before any dispute.
//
// The estimate per hour is what a node would earn fully used at its own
// asks (pay-as-ask: a placement pays the ask), and next to it the recent
// clearing price of each class it offers, so the owner sees whether its ask
// is above what the grid has been paying.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"
#include "market/market.h"
#include "market/recent_prices.h"

namespace idlegrid::market {

struct NodeOffering {
  std::string node_id;
  std::string name;
  std::vector<std::string> gpu_classes;  // one entry per device it offers
  double cpu_cores = 0;                  // cores it offers
  Asks asks;
};

struct EarningsInputs {
  std::string provider;
  std::vector<v1::Attempt> attempts;  // SUCCEEDED attempts of its nodes (any vote)
  std::vector<NodeOffering> nodes;
  std::map<std::string, RecentPrice> recent;  // device class -> recent clearing prices
  int64_t now_ms = 0;
};

v1::ProviderEarningsResponse SummarizeEarnings(const EarningsInputs& in);

// Plain text for `idlegrid provider earnings`.
std::string FormatEarnings(const v1::ProviderEarningsResponse& e);

// Puts `recent` clearing prices into market rows: into a class's row where
// there is one, as a row of its own otherwise (a class that cleared lately
// but has nothing free now). `idlegrid market` and earnings both show them.
void AddRecentPrices(const std::map<std::string, RecentPrice>& recent,
                     google::protobuf::RepeatedPtrField<v1::MarketRow>* rows);
// "median 0.3500/h, latest 0.4000/h over 3 placement(s)".
std::string DescribeRecentPrice(const v1::MarketRow& row);

}  // namespace idlegrid::market
