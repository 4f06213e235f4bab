// Receipts: canonical bytes, signing, countersigning, offline verification,
// the integer charge (src/receipt/).
#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>

#include <cctype>
#include <functional>
#include <limits>

#include "advert/node_key.h"
#include "receipt/assemble.h"
#include "receipt/canonical.h"
#include "receipt/receipt.h"

namespace idlegrid::receipt {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

v1::ReceiptStatement StatementFor(const advert::NodeKey& node) {
  v1::ReceiptStatement s;
  s.set_job_id("j-1");
  s.set_task_index(3);
  s.set_attempt_id("a-1");
  s.set_lease_epoch(2);
  s.set_node_id(node.node_id());
  s.set_started_at_ms(1000);
  s.set_finished_at_ms(61000);
  s.set_exit_code(0);
  auto* m = s.mutable_metering();
  m->set_cpu_millis(59000);
  m->set_cpu_source("cgroup");
  m->set_gpu_millis(120000);
  m->set_bytes_in(4096);
  m->set_bytes_out(512);
  m->set_run_ms(60000);
  auto* g = m->add_gpus();
  g->set_uuid("GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
  g->set_samples(13);
  g->set_utilization_pct_mean(71);
  g->set_utilization_pct_max(99);
  g->set_memory_used_bytes_max(80ull << 30);
  g->set_temperature_c_max(78);
  g->set_power_mw_mean(512000);
  g->set_power_mw_max(698000);
  g->set_throttle_reasons(0x5);
  auto* p = s.mutable_provenance();
  p->set_image_config_digest("sha256:" + std::string(64, 'c'));
  p->set_image_manifest_digest("sha256:" + std::string(64, 'm'));
  p->set_job_spec_digest("sha256:" + std::string(64, 's'));
  p->set_driver("runc");
  p->set_runtime("runc");
  p->set_runtime_version("runc version 1.1");
  p->set_seccomp_digest("sha256:" + std::string(64, 'e'));
  p->set_job_user("65534:65534 -> 100000:100000");
  p->set_kernel_release("6.1.0");
  p->set_gpu_driver_version("simulated");
  p->set_cuda_version("simulated");
  p->set_node_id(node.node_id());
  p->set_node_key_fingerprint(advert::KeyFingerprint(node.public_key()));
  p->add_env_names("HOME");
  p->add_env_names("PATH");
  p->set_agent_version("0.1.0");
  s.add_input_digests("sha256:" + std::string(64, 'i'));
  auto* o = s.add_outputs();
  o->set_path("result.json");
  o->set_digest("sha256:" + std::string(64, 'o'));
  o->set_size(512);
  // Outputs never carry chunks (only checkpoint files do), but a statement
  // that did must sign them like every other field.
  auto* chunk = o->add_chunks();
  chunk->set_digest("sha256:" + std::string(64, 'k'));
  chunk->set_size(512);
  return s;
}

v1::Attempt RecordedAttempt() {
  v1::Attempt a;
  a.set_id("a-1");
  a.set_state(v1::SUCCEEDED);
  a.set_assigned_at_ms(900);
  a.set_started_at_ms(1100);
  a.set_finished_at_ms(1100 + 3'600'000);  // one hour
  a.mutable_placement()->set_pricing_rule("pay-as-ask");
  a.mutable_placement()->set_price_per_hour(2.5);
  return a;
}

struct Signed {
  advert::NodeKey node = advert::NodeKey::Generate();
  advert::NodeKey coordinator = advert::NodeKey::Generate();
  v1::Receipt receipt;
  std::string pinned;

  Signed() {
    v1::ReceiptStatement s = StatementFor(node);
    auto sig = SignStatement(node, s);
    EXPECT_TRUE(sig.ok());
    receipt = AssembleReceipt(s, *sig, node.public_key(), RecordedAttempt(), "acme-provider");
    EXPECT_TRUE(Countersign(coordinator, &receipt).ok());
    pinned = Fingerprint(coordinator.public_key());
  }
};

TEST(CanonicalJson, SortsKeysIncludesDefaultsAndIsStable) {
  v1::OutputFile f;
  f.set_path("a\"b\n");
  f.set_size(7);
  auto json = CanonicalJson(f);
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(*json, R"({"digest":"","path":"a\"b\u000a","size":7})")
      << "chunks, added after v1, is left out while unset: receipts signed before keep their bytes";
  v1::OutputFile copy;
  ASSERT_TRUE(copy.ParseFromString(f.SerializeAsString()));
  EXPECT_EQ(*CanonicalJson(copy), *json);
  f.add_chunks()->set_size(7);
  EXPECT_EQ(*CanonicalJson(f), R"({"chunks":[{"digest":"","size":7}],"digest":"","path":"a\"b\u000a","size":7})");
}

TEST(CanonicalJson, BytesAreHexAndUnsetMessagesEncodeAsDefaults) {
  v1::Receipt r;
  r.set_node_public_key(std::string("\x01\xff", 2));
  auto json = CanonicalJson(r);
  ASSERT_TRUE(json.ok());
  EXPECT_NE(json->find(R"("node_public_key":"01ff")"), std::string::npos) << *json;
  EXPECT_NE(json->find(R"("metering":{"bytes_in":0,)"), std::string::npos) << *json;
  v1::Receipt with_empty_statement = r;
  with_empty_statement.mutable_statement();
  EXPECT_EQ(*CanonicalJson(with_empty_statement), *json);
}

TEST(CanonicalJson, RefusesFloatingPointAndUnknownFields) {
  v1::PlacementRecord placement;
  auto refused = CanonicalJson(placement);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("floating point"), std::string::npos);

  v1::Metering m;
  m.GetReflection()->MutableUnknownFields(&m)->AddVarint(99, 1);
  auto unknown = CanonicalJson(m);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("does not know"), std::string::npos);
}

TEST(CanonicalJson, TheStatementCoversEachGpusUsage) {
  advert::NodeKey node = advert::NodeKey::Generate();
  auto bytes = StatementBytes(StatementFor(node));
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_NE(bytes->find(R"("gpus":[{"memory_used_bytes_max":85899345920,"power_mw_max":698000,"power_mw_mean":512000,)"
                        R"("samples":13,"temperature_c_max":78,"throttle_reasons":5,"utilization_pct_max":99,)"
                        R"("utilization_pct_mean":71,"uuid":"GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"}])"),
            std::string::npos)
      << *bytes;
}

TEST(VerifyReceipt, AGenuineReceiptVerifiesAndSaysWhatItChecked) {
  Signed t;
  auto checked = VerifyReceipt(t.receipt, t.pinned);
  ASSERT_TRUE(checked.ok()) << checked.status().message();
  ASSERT_EQ(checked->size(), 5u);
  EXPECT_NE((*checked)[1].find("signed attempt a-1 (lease epoch 2)"), std::string::npos) << (*checked)[1];
  EXPECT_NE((*checked)[4].find("charge 2500000 micro-credits"), std::string::npos) << (*checked)[4];
  // The bare hex and upper case name the same key.
  std::string bare = t.pinned.substr(7);
  for (char& c : bare) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_TRUE(VerifyReceipt(t.receipt, bare).ok());
}

// Every leaf field of a receipt, at any depth, edited one at a time: each
// edit must fail verification, and the reason must name what failed.
void ForEachLeafEdit(Message* root, Message* m, const std::string& path,
                     const std::function<void(const std::string&)>& check) {
  const auto* d = m->GetDescriptor();
  const auto* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string name = path + f->name();
    if (f->is_repeated()) {
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        ASSERT_GT(r->FieldSize(*m, f), 0) << name << ": the fixture must fill every field";
        ForEachLeafEdit(root, r->MutableRepeatedMessage(m, f, 0), name + "[0].", check);
        r->AddMessage(m, f);
        check(name + " (an element added)");
        r->RemoveLast(m, f);
      } else {
        ASSERT_EQ(f->cpp_type(), FieldDescriptor::CPPTYPE_STRING) << name;
        ASSERT_GT(r->FieldSize(*m, f), 0) << name << ": the fixture must fill every field";
        const std::string saved = r->GetRepeatedString(*m, f, 0);
        r->SetRepeatedString(m, f, 0, saved + "x");
        check(name + "[0]");
        r->SetRepeatedString(m, f, 0, saved);
        r->AddString(m, f, "");
        check(name + " (an element added)");
        r->RemoveLast(m, f);
      }
      continue;
    }
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_MESSAGE:
        ForEachLeafEdit(root, r->MutableMessage(m, f), name + ".", check);
        break;
      case FieldDescriptor::CPPTYPE_STRING: {
        const std::string saved = r->GetString(*m, f);
        r->SetString(m, f, saved.empty() ? "x" : saved.substr(0, saved.size() - 1) + char(saved.back() ^ 1));
        check(name);
        r->SetString(m, f, saved);
        break;
      }
      case FieldDescriptor::CPPTYPE_INT32: {
        const auto saved = r->GetInt32(*m, f);
        r->SetInt32(m, f, saved + 1);
        check(name);
        r->SetInt32(m, f, saved);
        break;
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        const auto saved = r->GetInt64(*m, f);
        r->SetInt64(m, f, saved + 1);
        check(name);
        r->SetInt64(m, f, saved);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        const auto saved = r->GetUInt32(*m, f);
        r->SetUInt32(m, f, saved + 1);
        check(name);
        r->SetUInt32(m, f, saved);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        const auto saved = r->GetUInt64(*m, f);
        r->SetUInt64(m, f, saved + 1);
        check(name);
        r->SetUInt64(m, f, saved);
        break;
      }
      default:
        ADD_FAILURE() << name << " has a type this test does not edit; add it";
    }
  }
}

TEST(VerifyReceipt, AnEditInAnyFieldFailsNamingWhatFailed) {
  Signed t;
  v1::Receipt edited = t.receipt;
  int edits = 0;
  ForEachLeafEdit(&edited, &edited, "", [&](const std::string& field) {
    ++edits;
    auto verdict = VerifyReceipt(edited, t.pinned);
    ASSERT_FALSE(verdict.ok()) << "an edit of " << field << " still verifies";
    const std::string& why = verdict.status().message();
    const bool named = why.find("node signature") != std::string::npos ||
                       why.find("coordinator signature") != std::string::npos ||
                       why.find("node key") != std::string::npos || why.find("coordinator key") != std::string::npos ||
                       why.find("receipt version") != std::string::npos;
    EXPECT_TRUE(named) << field << ": " << why;
  });
  // 15 receipt fields less the statement, 11 statement leaves less metering
  // and provenance and outputs, 6 metering, 9 per GPU usage (+1 for its
  // list), 15 provenance (+1 for its list), 3 per output (+1 for its list),
  // the inputs' list (twice).
  EXPECT_GE(edits, 55);
  EXPECT_TRUE(VerifyReceipt(edited, t.pinned).ok()) << "the edits were not all undone";
}

TEST(VerifyReceipt, StatementEditsAreCaughtByTheNodeSignature) {
  Signed t;
  t.receipt.mutable_statement()->mutable_metering()->set_cpu_millis(1);
  auto verdict = VerifyReceipt(t.receipt, t.pinned);
  ASSERT_FALSE(verdict.ok());
  EXPECT_NE(verdict.status().message().find("node signature does not verify"), std::string::npos)
      << verdict.status().message();
}

TEST(VerifyReceipt, CoordinatorFieldEditsAreCaughtByTheCountersignature) {
  Signed t;
  t.receipt.set_charge_micro(1);
  auto verdict = VerifyReceipt(t.receipt, t.pinned);
  ASSERT_FALSE(verdict.ok());
  EXPECT_NE(verdict.status().message().find("coordinator signature does not verify"), std::string::npos)
      << verdict.status().message();
}

TEST(VerifyReceipt, SignedByAnotherNodesKeyFails) {
  Signed t;
  advert::NodeKey other = advert::NodeKey::Generate();
  // The other key signs the same statement: its key is not the statement's node.
  v1::Receipt swapped = t.receipt;
  swapped.set_node_public_key(other.public_key());
  swapped.set_node_signature(*SignStatement(other, swapped.statement()));
  auto verdict = VerifyReceipt(swapped, t.pinned);
  ASSERT_FALSE(verdict.ok());
  EXPECT_NE(verdict.status().message().find("is node " + other.node_id() + ", but the statement names node " +
                                            t.node.node_id()),
            std::string::npos)
      << verdict.status().message();

  // The other key signs a statement renamed to itself: the countersignature breaks.
  v1::Receipt renamed = t.receipt;
  auto* s = renamed.mutable_statement();
  s->set_node_id(other.node_id());
  s->mutable_provenance()->set_node_id(other.node_id());
  s->mutable_provenance()->set_node_key_fingerprint(Fingerprint(other.public_key()));
  renamed.set_node_public_key(other.public_key());
  renamed.set_node_signature(*SignStatement(other, *s));
  verdict = VerifyReceipt(renamed, t.pinned);
  ASSERT_FALSE(verdict.ok());
  EXPECT_NE(verdict.status().message().find("coordinator signature does not verify"), std::string::npos)
      << verdict.status().message();

  // Only the signature replaced: it is not the named key's.
  v1::Receipt forged = t.receipt;
  forged.set_node_signature(*SignStatement(other, forged.statement()));
  verdict = VerifyReceipt(forged, t.pinned);
  ASSERT_FALSE(verdict.ok());
  EXPECT_NE(verdict.status().message().find("node signature does not verify"), std::string::npos);
}

TEST(VerifyReceipt, CountersignedByAnotherCoordinatorKeyFails) {
  Signed t;
  advert::NodeKey rogue = advert::NodeKey::Generate();
  v1::Receipt recountersigned = t.receipt;
  ASSERT_TRUE(Countersign(rogue, &recountersigned).ok());
  auto verdict = VerifyReceipt(recountersigned, t.pinned);
  ASSERT_FALSE(verdict.ok());
  EXPECT_NE(
      verdict.status().message().find("coordinator key " + Fingerprint(rogue.public_key()) + " is not the pinned key"),
      std::string::npos)
      << verdict.status().message();
  // The rogue's signature under the pinned key's name.
  recountersigned.set_coordinator_public_key(t.coordinator.public_key());
  verdict = VerifyReceipt(recountersigned, t.pinned);
  ASSERT_FALSE(verdict.ok());
  EXPECT_NE(verdict.status().message().find("coordinator signature does not verify"), std::string::npos);
  // And a genuine receipt checked against another pinned key.
  verdict = VerifyReceipt(t.receipt, Fingerprint(rogue.public_key()));
  ASSERT_FALSE(verdict.ok());
  EXPECT_NE(verdict.status().message().find("is not the pinned key"), std::string::npos);
}

TEST(VerifyReceipt, MalformedInputsAreNamed) {
  Signed t;
  auto bad_pin = VerifyReceipt(t.receipt, "sha256:12");
  ASSERT_FALSE(bad_pin.ok());
  EXPECT_EQ(bad_pin.status().code(), Code::kInvalidArgument);
  v1::Receipt short_key = t.receipt;
  short_key.set_node_public_key("abc");
  auto verdict = VerifyReceipt(short_key, t.pinned);
  ASSERT_FALSE(verdict.ok());
  EXPECT_NE(verdict.status().message().find("node key is 3 bytes"), std::string::npos);
}

TEST(CheckStatement, AcceptsTheEnrolledNodesStatementForItsLeaseOnly) {
  advert::NodeKey node = advert::NodeKey::Generate();
  advert::NodeKey other = advert::NodeKey::Generate();
  const v1::ReceiptStatement s = StatementFor(node);
  const std::string sig = *SignStatement(node, s);
  const StatementExpectation good{"j-1", 3, "a-1", 2, node.node_id(), node.public_key()};
  EXPECT_TRUE(CheckStatement(s, sig, good).ok());

  struct Case {
    const char* name;
    std::function<void(StatementExpectation&, std::string&)> edit;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"another attempt", [](auto& e, auto&) { e.attempt_id = "a-2"; }, "names attempt a-1, not a-2"},
      {"a superseded lease", [](auto& e, auto&) { e.lease_epoch = 3; }, "names lease epoch 2, not 3"},
      {"another job", [](auto& e, auto&) { e.job_id = "j-2"; }, "names job j-1, not j-2"},
      {"another task", [](auto& e, auto&) { e.task_index = 4; }, "names task 3, not 4"},
      {"another node", [&](auto& e, auto&) { e.node_id = other.node_id(); }, "names node"},
      {"another enrolled key", [&](auto& e, auto&) { e.enrolled_public_key = other.public_key(); }, "names node key"},
      {"a signature by another key", [&](auto&, auto& signature) { signature = *SignStatement(other, s); },
       "does not verify with node"},
      {"no signature", [](auto&, auto& signature) { signature.clear(); }, "does not verify with node"},
  };
  for (const Case& c : cases) {
    StatementExpectation e = good;
    std::string signature = sig;
    c.edit(e, signature);
    Status st = CheckStatement(s, signature, e);
    ASSERT_FALSE(st.ok()) << c.name;
    EXPECT_EQ(st.code(), Code::kPermissionDenied) << c.name;
    EXPECT_NE(st.message().find(c.reason), std::string::npos) << c.name << ": " << st.message();
  }
}

TEST(CheckStatement, AnEditedStatementFails) {
  advert::NodeKey node = advert::NodeKey::Generate();
  v1::ReceiptStatement s = StatementFor(node);
  const std::string sig = *SignStatement(node, s);
  s.mutable_outputs(0)->set_digest("sha256:" + std::string(64, 'f'));
  EXPECT_FALSE(CheckStatement(s, sig, {"j-1", 3, "a-1", 2, node.node_id(), node.public_key()}).ok());
}

TEST(ChargeMicro, PriceTimesRunTimeRoundedDown) {
  struct Case {
    int64_t price, run_ms, want;
  };
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::vector<Case> cases = {
      {2'500'000, 3'600'000, 2'500'000},  // one hour at 2.5 credits/h
      {2'500'000, 1'800'000, 1'250'000},  // half an hour
      {1'000'000, 1, 0},                  // 0.277... micro-credits: rounded down
      {3'600'000, 1, 1},                  // exactly one
      {3'600'001, 1, 1},                  // 1.0000003: down
      {7, 3'600'000 * 3 - 1, 20},         // 20.99999: down
      {0, 1'000'000, 0},
      {1'000'000, 0, 0},
      {-5, 1'000'000, 0},
      {1'000'000, -5, 0},
      {kMax, 3'600'000, kMax},  // 128-bit intermediate: exact, no overflow
      {kMax, 3'600'001, kMax},  // saturates
      {1'000'000'000'000, 86'400'000LL * 365 * 10, 87'600'000'000'000'000LL},  // 10 years at 1e6 credits/h
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ChargeMicro(c.price, c.run_ms), c.want) << c.price << " x " << c.run_ms;
  }
}

TEST(MicroFromCredits, RoundsToNearestAndRefusesNonsense) {
  EXPECT_EQ(MicroFromCredits(2.5), 2'500'000);
  EXPECT_EQ(MicroFromCredits(0.1), 100'000);  // 0.1 is not exact in binary: nearest
  EXPECT_EQ(MicroFromCredits(0.0000004), 0);
  EXPECT_EQ(MicroFromCredits(0.0000005), 1);
  EXPECT_EQ(MicroFromCredits(-1), 0);
  EXPECT_EQ(MicroFromCredits(std::numeric_limits<double>::quiet_NaN()), 0);
  EXPECT_EQ(MicroFromCredits(std::numeric_limits<double>::infinity()), 0);
  EXPECT_EQ(MicroFromCredits(1e300), std::numeric_limits<int64_t>::max());
}

TEST(AssembleReceipt, TakesTheCoordinatorsRecordAndCharge) {
  advert::NodeKey node = advert::NodeKey::Generate();
  v1::Attempt a = RecordedAttempt();
  a.set_state(v1::FAILED);
  a.set_failure_reason(v1::NONZERO_EXIT);
  v1::Receipt r = AssembleReceipt(StatementFor(node), "sig", node.public_key(), a, "acme");
  EXPECT_EQ(r.version(), kReceiptVersion);
  EXPECT_EQ(r.provider(), "acme");
  EXPECT_EQ(r.state(), "FAILED");
  EXPECT_EQ(r.failure_reason(), "NONZERO_EXIT");
  EXPECT_EQ(r.pricing_rule(), "pay-as-ask");
  EXPECT_EQ(r.price_per_hour_micro(), 2'500'000);
  EXPECT_EQ(r.charge_micro(), 2'500'000);
  EXPECT_EQ(r.assigned_at_ms(), 900);
  a.set_started_at_ms(0);  // never started: nothing charged
  EXPECT_EQ(AssembleReceipt(StatementFor(node), "sig", node.public_key(), a, "acme").charge_micro(), 0);
}

}  // namespace
}  // namespace idlegrid::receipt
