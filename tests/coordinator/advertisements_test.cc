// The coordinator's acceptance of node advertisements: registration
// derives the node id from the signing key, and a heartbeat's advertisement is
// rejected -- and logged, with the stored record left as it was -- when its
// signature is bad, its sequence is stale, its node id does not derive from
// its key, or it was signed by a key other than the one the node registered.
//
// In process: a real SQLite store and artifact store in a fresh temp dir, a
// manual clock, and no Start() (no background thread).
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "advert/advertisement.h"
#include "advert/node_key.h"
#include "artifacts/artifact_store.h"
#include "common/clock.h"
#include "common/fs.h"
#include "coordinator/coordinator.h"
#include "coordinator/pipeline_support.h"
#include "sched/pipeline.h"
#include "store/store.h"

namespace idlegrid::coordinator {
namespace {

using advert::NodeKey;
using google::protobuf::util::MessageDifferencer;

constexpr char kJoinSecret[] = "igj_test";
constexpr char kPeer[] = "test";

bool StartsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/coordinator_test.XXXXXX";
    if (const char* made = ::mkdtemp(tmpl)) path_ = made;
  }
  ~TempDir() {
    if (!path_.empty()) (void)RemoveTree(path_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Records everything the default logger writes while it is alive.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    sink_->set_pattern("[%l] %v");
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

// What a well-behaved agent advertises; the node id is filled in by signing.
v1::Advertisement BaseAd(uint64_t sequence) { return testing::AdOf(sequence); }

v1::GpuDevice SimulatedGpu() {
  v1::GpuDevice d;
  d.set_index(0);
  d.set_uuid("GPU-sim-0");
  d.set_name("Simulated A100");
  d.set_memory_total_bytes(40ull << 30);
  d.set_driver_version("550.0");
  d.set_simulated(true);
  d.set_measured(true);  // a node's claim; only the coordinator may set it
  return d;
}

// Signs `ad` exactly as given (SignAdvertisement would overwrite its node id),
// carrying `signer`'s public key.
v1::SignedAdvertisement SignVerbatim(const v1::Advertisement& ad, const NodeKey& signer) {
  v1::SignedAdvertisement signed_ad;
  ad.SerializeToString(signed_ad.mutable_advertisement());
  signed_ad.set_public_key(signer.public_key());
  signed_ad.set_signature(signer.Sign(signed_ad.advertisement()));
  return signed_ad;
}

v1::RegisterRequest RegisterRequestFor(const v1::SignedAdvertisement& signed_ad, const std::string& name = "node-a",
                                       const std::string& secret = kJoinSecret) {
  v1::RegisterRequest request;
  request.set_join_secret(secret);
  request.set_name(name);
  request.mutable_info()->set_hostname(name);
  request.mutable_info()->set_cpu_cores(4);
  request.mutable_info()->set_agent_version(AgentVersionString());
  *request.mutable_advertisement() = signed_ad;
  return request;
}

v1::HeartbeatRequest HeartbeatWith(const v1::SignedAdvertisement& signed_ad) {
  v1::HeartbeatRequest request;
  *request.mutable_advertisement() = signed_ad;
  return request;
}

class AdvertisementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty()) << "mkdtemp failed";
    ASSERT_NO_FATAL_FAILURE(MakeCoordinator(/*allow_simulated_gpus=*/false));
  }

  void MakeCoordinator(bool allow_simulated_gpus) {
    coordinator_.reset();
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto artifacts = std::make_unique<artifacts::ArtifactStore>(dir_.path() + "/artifacts");
    Status init = artifacts->Init();
    ASSERT_TRUE(init.ok()) << init.ToString();
    Options options;
    options.allow_simulated_gpus = allow_simulated_gpus;
    coordinator_ = std::make_unique<Coordinator>(std::move(*store), std::move(artifacts), sched::NewPipelineScheduler(),
                                                 kJoinSecret, options, &clock_);
  }

  // Registers `key` with a valid advertisement of sequence 5.
  void RegisterNode(const NodeKey& key, const std::string& name = "node-a") {
    auto response =
        coordinator_->nodes().Register(RegisterRequestFor(advert::SignAdvertisement(BaseAd(5), key), name), kPeer);
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    ASSERT_EQ(response->node_id(), key.node_id());
  }

  std::optional<store::NodeRecord> Stored(const std::string& node_id) {
    auto record = coordinator_->store()->GetNode(node_id);
    EXPECT_TRUE(record.ok()) << record.status().ToString();
    return record.ok() ? *record : std::nullopt;
  }

  // The coordinator's live view of the node's advertisement (ListNodes).
  std::optional<v1::Node> Listed(const std::string& node_id) {
    auto nodes = coordinator_->nodes().List();
    EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
    if (!nodes.ok()) return std::nullopt;
    for (const auto& n : nodes->nodes()) {
      if (n.id() == node_id) return n;
    }
    return std::nullopt;
  }

  // Asserts that neither the stored record nor the live view moved from
  // `before` (a record read before the rejected call).
  void ExpectUnchanged(const store::NodeRecord& before) {
    auto after = Stored(before.id);
    ASSERT_TRUE(after.has_value()) << before.id << " vanished from the store";
    EXPECT_EQ(after->last_sequence, before.last_sequence);
    EXPECT_EQ(after->public_key, before.public_key);
    EXPECT_TRUE(MessageDifferencer::Equals(after->advertisement, before.advertisement))
        << "stored:\n"
        << after->advertisement.DebugString() << "before:\n"
        << before.advertisement.DebugString();
    auto listed = Listed(before.id);
    ASSERT_TRUE(listed.has_value());
    EXPECT_TRUE(MessageDifferencer::Equals(listed->advertisement(), before.advertisement))
        << "live view:\n"
        << listed->advertisement().DebugString();
  }

  void ExpectNothingStored(const std::string& node_id) {
    EXPECT_FALSE(Stored(node_id).has_value()) << node_id << " was stored";
    auto nodes = coordinator_->nodes().List();
    ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
    EXPECT_EQ(nodes->nodes_size(), 0);
  }

  TempDir dir_;  // declared first: outlives the coordinator's open files
  ManualClock clock_;
  std::unique_ptr<Coordinator> coordinator_;
};

// ---------------------------------------------------------------------------
// Registration

TEST_F(AdvertisementTest, RegistrationDerivesNodeIdFromKeyAndNewerHeartbeatIsStored) {
  NodeKey key = NodeKey::Generate();
  ASSERT_NO_FATAL_FAILURE(RegisterNode(key));
  const std::string id = key.node_id();
  EXPECT_TRUE(StartsWith(id, "n-")) << id;

  auto stored = Stored(id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->public_key, key.public_key());
  EXPECT_EQ(stored->last_sequence, 5u);
  EXPECT_EQ(stored->advertisement.sequence(), 5u);
  EXPECT_EQ(stored->advertisement.node_id(), id);

  v1::Advertisement next = BaseAd(6);
  next.set_region("lab-2");
  next.set_allocatable_cpu(2);
  auto hb = coordinator_->nodes().Heartbeat(id, HeartbeatWith(advert::SignAdvertisement(next, key)));
  ASSERT_TRUE(hb.ok()) << hb.status().ToString();

  stored = Stored(id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->last_sequence, 6u);
  EXPECT_EQ(stored->advertisement.sequence(), 6u);
  EXPECT_EQ(stored->advertisement.region(), "lab-2");
  EXPECT_EQ(stored->advertisement.allocatable_cpu(), 2);
  auto listed = Listed(id);
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(listed->advertisement().sequence(), 6u);
  EXPECT_EQ(listed->advertisement().region(), "lab-2");
}

TEST_F(AdvertisementTest, TamperedRegistrationIsRefusedAndNothingStored) {
  NodeKey key = NodeKey::Generate();
  v1::SignedAdvertisement signed_ad = advert::SignAdvertisement(BaseAd(5), key);
  v1::Advertisement inflated;
  ASSERT_TRUE(inflated.ParseFromString(signed_ad.advertisement()));
  inflated.set_allocatable_cpu(512);
  v1::SignedAdvertisement tampered = signed_ad;
  inflated.SerializeToString(tampered.mutable_advertisement());

  auto response = coordinator_->nodes().Register(RegisterRequestFor(tampered), kPeer);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kPermissionDenied) << response.status().ToString();
  EXPECT_TRUE(StartsWith(response.status().message(), "bad signature")) << response.status().message();
  ExpectNothingStored(key.node_id());

  // The same request untouched registers: the edit was what was refused.
  auto control = coordinator_->nodes().Register(RegisterRequestFor(signed_ad), kPeer);
  EXPECT_TRUE(control.ok()) << control.status().ToString();
}

TEST_F(AdvertisementTest, NodeIdNotDerivedFromKeyIsRefusedAtRegistration) {
  NodeKey key = NodeKey::Generate();
  v1::Advertisement ad = BaseAd(5);
  const std::string claimed = "n-0123456789abcdef";
  ASSERT_NE(claimed, key.node_id());
  ad.set_node_id(claimed);

  auto response = coordinator_->nodes().Register(RegisterRequestFor(SignVerbatim(ad, key)), kPeer);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kPermissionDenied) << response.status().ToString();
  EXPECT_TRUE(StartsWith(response.status().message(), "node id mismatch")) << response.status().message();
  ExpectNothingStored(claimed);
  ExpectNothingStored(key.node_id());
}

TEST_F(AdvertisementTest, RegistrationUnderAnotherNodesIdCannotTakeItOver) {
  NodeKey victim = NodeKey::Generate();
  ASSERT_NO_FATAL_FAILURE(RegisterNode(victim));
  auto before = Stored(victim.node_id());
  ASSERT_TRUE(before.has_value());

  NodeKey attacker = NodeKey::Generate();
  v1::Advertisement ad = BaseAd(50);
  ad.set_node_id(victim.node_id());
  auto response = coordinator_->nodes().Register(RegisterRequestFor(SignVerbatim(ad, attacker), "evil"), kPeer);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kPermissionDenied) << response.status().ToString();
  EXPECT_TRUE(StartsWith(response.status().message(), "node id mismatch")) << response.status().message();
  ExpectUnchanged(*before);
  EXPECT_EQ(Stored(victim.node_id())->name, "node-a");
  EXPECT_FALSE(Stored(attacker.node_id()).has_value());
}

TEST_F(AdvertisementTest, WrongJoinSecretIsRefusedAndNothingStored) {
  NodeKey key = NodeKey::Generate();
  v1::SignedAdvertisement signed_ad = advert::SignAdvertisement(BaseAd(5), key);
  auto response = coordinator_->nodes().Register(RegisterRequestFor(signed_ad, "node-a", "igj_wrong"), kPeer);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kPermissionDenied) << response.status().ToString();
  ExpectNothingStored(key.node_id());

  auto control = coordinator_->nodes().Register(RegisterRequestFor(signed_ad, "node-a", kJoinSecret), kPeer);
  EXPECT_TRUE(control.ok()) << control.status().ToString();
}

TEST_F(AdvertisementTest, ReplayedRegistrationIsStale) {
  NodeKey key = NodeKey::Generate();
  v1::RegisterRequest request = RegisterRequestFor(advert::SignAdvertisement(BaseAd(5), key));
  ASSERT_TRUE(coordinator_->nodes().Register(request, kPeer).ok());
  auto before = Stored(key.node_id());
  ASSERT_TRUE(before.has_value());

  auto replay = coordinator_->nodes().Register(request, kPeer);
  ASSERT_FALSE(replay.ok());
  EXPECT_EQ(replay.status().code(), Code::kFailedPrecondition) << replay.status().ToString();
  EXPECT_TRUE(StartsWith(replay.status().message(), "stale sequence")) << replay.status().message();
  ExpectUnchanged(*before);

  // A fresh sequence from the same key re-registers (a restarted agent).
  auto fresh = coordinator_->nodes().Register(RegisterRequestFor(advert::SignAdvertisement(BaseAd(6), key)), kPeer);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->node_id(), key.node_id());
  EXPECT_EQ(Stored(key.node_id())->last_sequence, 6u);
}

// ---------------------------------------------------------------------------
// Heartbeats

TEST_F(AdvertisementTest, TamperedHeartbeatAdvertisementIsRejected) {
  NodeKey key = NodeKey::Generate();
  ASSERT_NO_FATAL_FAILURE(RegisterNode(key));
  const std::string id = key.node_id();
  auto before = Stored(id);
  ASSERT_TRUE(before.has_value());
  const v1::SignedAdvertisement genuine = advert::SignAdvertisement(BaseAd(6), key);

  struct Tamper {
    const char* what;
    v1::SignedAdvertisement signed_ad;
  };
  std::vector<Tamper> cases;
  {
    v1::Advertisement inflated;
    ASSERT_TRUE(inflated.ParseFromString(genuine.advertisement()));
    inflated.set_allocatable_cpu(512);
    v1::SignedAdvertisement t = genuine;
    inflated.SerializeToString(t.mutable_advertisement());
    cases.push_back({"field edited after signing", t});
  }
  {
    v1::SignedAdvertisement t = genuine;
    t.mutable_advertisement()->back() ^= 0x01;
    cases.push_back({"one byte flipped", t});
  }
  {
    v1::SignedAdvertisement t = genuine;
    (*t.mutable_signature())[10] ^= 0x80;
    cases.push_back({"signature flipped", t});
  }
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto hb = coordinator_->nodes().Heartbeat(id, HeartbeatWith(c.signed_ad));
    ASSERT_FALSE(hb.ok());
    EXPECT_EQ(hb.status().code(), Code::kPermissionDenied) << hb.status().ToString();
    EXPECT_TRUE(StartsWith(hb.status().message(), "bad signature")) << hb.status().message();
    ExpectUnchanged(*before);
  }

  // Rejections burn no sequence: the genuine advertisement 6 still goes in.
  auto control = coordinator_->nodes().Heartbeat(id, HeartbeatWith(genuine));
  ASSERT_TRUE(control.ok()) << control.status().ToString();
  EXPECT_EQ(Stored(id)->last_sequence, 6u);
}

TEST_F(AdvertisementTest, AdvertisementSignedByAnotherKeyIsRejected) {
  NodeKey key = NodeKey::Generate();
  ASSERT_NO_FATAL_FAILURE(RegisterNode(key));
  const std::string id = key.node_id();
  auto before = Stored(id);
  ASSERT_TRUE(before.has_value());

  NodeKey other = NodeKey::Generate();
  v1::Advertisement forged = BaseAd(6);
  forged.set_node_id(id);  // claims to be this node

  // The other key's own public key and signature: not the registered key.
  auto hb = coordinator_->nodes().Heartbeat(id, HeartbeatWith(SignVerbatim(forged, other)));
  ASSERT_FALSE(hb.ok());
  EXPECT_EQ(hb.status().code(), Code::kPermissionDenied) << hb.status().ToString();
  EXPECT_TRUE(StartsWith(hb.status().message(), "wrong key")) << hb.status().message();
  ExpectUnchanged(*before);

  // This node's public key with the other key's signature: does not verify.
  v1::SignedAdvertisement borrowed_key = SignVerbatim(forged, other);
  borrowed_key.set_public_key(key.public_key());
  hb = coordinator_->nodes().Heartbeat(id, HeartbeatWith(borrowed_key));
  ASSERT_FALSE(hb.ok());
  EXPECT_EQ(hb.status().code(), Code::kPermissionDenied) << hb.status().ToString();
  EXPECT_TRUE(StartsWith(hb.status().message(), "bad signature")) << hb.status().message();
  ExpectUnchanged(*before);
}

TEST_F(AdvertisementTest, NodeIdNotDerivedFromKeyIsRejectedInHeartbeat) {
  NodeKey key = NodeKey::Generate();
  ASSERT_NO_FATAL_FAILURE(RegisterNode(key));
  const std::string id = key.node_id();
  auto before = Stored(id);
  ASSERT_TRUE(before.has_value());

  v1::Advertisement ad = BaseAd(6);
  ad.set_node_id("n-0123456789abcdef");
  auto hb = coordinator_->nodes().Heartbeat(id, HeartbeatWith(SignVerbatim(ad, key)));
  ASSERT_FALSE(hb.ok());
  EXPECT_EQ(hb.status().code(), Code::kPermissionDenied) << hb.status().ToString();
  EXPECT_TRUE(StartsWith(hb.status().message(), "node id mismatch")) << hb.status().message();
  ExpectUnchanged(*before);
}

TEST_F(AdvertisementTest, StaleSequencesAreRejected) {
  NodeKey key = NodeKey::Generate();
  ASSERT_NO_FATAL_FAILURE(RegisterNode(key));
  const std::string id = key.node_id();
  auto before = Stored(id);
  ASSERT_TRUE(before.has_value());

  for (uint64_t sequence : {5u, 4u, 0u}) {
    SCOPED_TRACE("sequence " + std::to_string(sequence));
    v1::Advertisement ad = BaseAd(sequence);
    ad.set_region("replayed");
    auto hb = coordinator_->nodes().Heartbeat(id, HeartbeatWith(advert::SignAdvertisement(ad, key)));
    ASSERT_FALSE(hb.ok());
    EXPECT_EQ(hb.status().code(), Code::kFailedPrecondition) << hb.status().ToString();
    EXPECT_TRUE(StartsWith(hb.status().message(), "stale sequence")) << hb.status().message();
    ExpectUnchanged(*before);
  }

  // After 7 is accepted, a genuine 6 sent late is a replay, as is 7 again.
  const v1::SignedAdvertisement six = advert::SignAdvertisement(BaseAd(6), key);
  const v1::SignedAdvertisement seven = advert::SignAdvertisement(BaseAd(7), key);
  ASSERT_TRUE(coordinator_->nodes().Heartbeat(id, HeartbeatWith(seven)).ok());
  auto at_seven = Stored(id);
  ASSERT_TRUE(at_seven.has_value());
  EXPECT_EQ(at_seven->last_sequence, 7u);
  for (const auto* replay : {&six, &seven}) {
    auto hb = coordinator_->nodes().Heartbeat(id, HeartbeatWith(*replay));
    ASSERT_FALSE(hb.ok());
    EXPECT_EQ(hb.status().code(), Code::kFailedPrecondition) << hb.status().ToString();
    EXPECT_TRUE(StartsWith(hb.status().message(), "stale sequence")) << hb.status().message();
    ExpectUnchanged(*at_seven);
  }
}

TEST_F(AdvertisementTest, AnotherNodesAdvertisementIsRejectedUnderThisNodesIdentity) {
  NodeKey a = NodeKey::Generate();
  NodeKey b = NodeKey::Generate();
  ASSERT_NO_FATAL_FAILURE(RegisterNode(a, "node-a"));
  ASSERT_NO_FATAL_FAILURE(RegisterNode(b, "node-b"));
  auto a_before = Stored(a.node_id());
  auto b_before = Stored(b.node_id());
  ASSERT_TRUE(a_before.has_value());
  ASSERT_TRUE(b_before.has_value());

  // B's genuine advertisement, sent with A's identity (A's agent token).
  const v1::SignedAdvertisement b_ad = advert::SignAdvertisement(BaseAd(6), b);
  auto hb = coordinator_->nodes().Heartbeat(a.node_id(), HeartbeatWith(b_ad));
  ASSERT_FALSE(hb.ok());
  EXPECT_EQ(hb.status().code(), Code::kPermissionDenied) << hb.status().ToString();
  // The registered-key check comes first (advert/advertisement.h), so this is
  // reported as a wrong key naming the signer, before the coordinator's own
  // "advertisement is for node ..." check is reached.
  EXPECT_TRUE(StartsWith(hb.status().message(), "wrong key")) << hb.status().message();
  EXPECT_NE(hb.status().message().find(b.node_id()), std::string::npos) << hb.status().message();
  ExpectUnchanged(*a_before);
  ExpectUnchanged(*b_before);

  // Nothing was recorded for B either: B itself can still send it.
  auto control = coordinator_->nodes().Heartbeat(b.node_id(), HeartbeatWith(b_ad));
  ASSERT_TRUE(control.ok()) << control.status().ToString();
  EXPECT_EQ(Stored(b.node_id())->last_sequence, 6u);
  ExpectUnchanged(*a_before);
}

TEST_F(AdvertisementTest, HeartbeatForUnregisteredNodeIsNotFound) {
  NodeKey key = NodeKey::Generate();
  auto hb = coordinator_->nodes().Heartbeat(key.node_id(), HeartbeatWith(advert::SignAdvertisement(BaseAd(6), key)));
  ASSERT_FALSE(hb.ok());
  EXPECT_EQ(hb.status().code(), Code::kNotFound) << hb.status().ToString();
  ExpectNothingStored(key.node_id());
}

// ---------------------------------------------------------------------------
// Simulated devices and schedulability

TEST_F(AdvertisementTest, SimulatedGpuIsRefusedUnlessAllowed) {
  NodeKey key = NodeKey::Generate();
  v1::Advertisement ad = BaseAd(5);
  *ad.mutable_inventory()->mutable_gpus()->add_devices() = SimulatedGpu();
  ad.mutable_inventory()->mutable_gpus()->set_available(true);
  v1::RegisterRequest request = RegisterRequestFor(advert::SignAdvertisement(ad, key));

  auto refused = coordinator_->nodes().Register(request, kPeer);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kPermissionDenied) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("simulated GPU"), std::string::npos) << refused.status().message();
  ExpectNothingStored(key.node_id());

  // A registered node cannot slip one in through a heartbeat either.
  NodeKey plain = NodeKey::Generate();
  ASSERT_NO_FATAL_FAILURE(RegisterNode(plain, "plain"));
  auto before = Stored(plain.node_id());
  ASSERT_TRUE(before.has_value());
  v1::Advertisement with_gpu = ad;
  with_gpu.set_sequence(6);
  auto hb = coordinator_->nodes().Heartbeat(plain.node_id(), HeartbeatWith(advert::SignAdvertisement(with_gpu, plain)));
  ASSERT_FALSE(hb.ok());
  EXPECT_EQ(hb.status().code(), Code::kPermissionDenied) << hb.status().ToString();
  EXPECT_NE(hb.status().message().find("simulated GPU"), std::string::npos) << hb.status().message();
  ExpectUnchanged(*before);
}

TEST_F(AdvertisementTest, SimulatedGpuIsListedUnmeasuredWhenAllowed) {
  ASSERT_NO_FATAL_FAILURE(MakeCoordinator(/*allow_simulated_gpus=*/true));
  NodeKey key = NodeKey::Generate();
  v1::Advertisement ad = BaseAd(5);
  *ad.mutable_inventory()->mutable_gpus()->add_devices() = SimulatedGpu();
  ad.mutable_inventory()->mutable_gpus()->set_available(true);

  auto response = coordinator_->nodes().Register(RegisterRequestFor(advert::SignAdvertisement(ad, key)), kPeer);
  ASSERT_TRUE(response.ok()) << response.status().ToString();

  auto listed = Listed(key.node_id());
  ASSERT_TRUE(listed.has_value());
  ASSERT_EQ(listed->gpus_size(), 1);
  EXPECT_EQ(listed->gpus(0).uuid(), "GPU-sim-0");
  EXPECT_TRUE(listed->gpus(0).simulated());
  EXPECT_FALSE(listed->gpus(0).measured()) << "the node's own claim of measured must not survive";
  EXPECT_EQ(listed->gpus(0).allocatable_memory_bytes(), 40ull << 30);
  ASSERT_EQ(listed->advertisement().inventory().gpus().devices_size(), 1);
  EXPECT_TRUE(listed->advertisement().inventory().gpus().devices(0).simulated());
}

TEST_F(AdvertisementTest, NodeIsNotSchedulableBeforeAMeasurement) {
  NodeKey key = NodeKey::Generate();
  ASSERT_NO_FATAL_FAILURE(RegisterNode(key));
  const std::string id = key.node_id();

  auto listed = Listed(id);
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(listed->state(), "offline");
  EXPECT_FALSE(listed->schedulable());
  EXPECT_EQ(listed->unschedulable_reason(), "offline");

  v1::NodeInfo info;
  info.set_hostname("node-a");
  info.set_cpu_cores(4);
  auto session = coordinator_->nodes().OpenSession(id, info, kPeer);
  ASSERT_NE(session, nullptr);

  listed = Listed(id);
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(listed->state(), "online");
  EXPECT_FALSE(listed->schedulable());
  // benchmarks().PrepareCpu was never called (and so never failed): the node waits
  // for its readiness benchmark.
  EXPECT_EQ(listed->unschedulable_reason(), "readiness benchmark pending");
  EXPECT_EQ(listed->measurement().measured_at_ms(), 0);

  // A newer advertisement does not make it schedulable either.
  ASSERT_TRUE(coordinator_->nodes().Heartbeat(id, HeartbeatWith(advert::SignAdvertisement(BaseAd(6), key))).ok());
  listed = Listed(id);
  ASSERT_TRUE(listed.has_value());
  EXPECT_FALSE(listed->schedulable());
  EXPECT_EQ(listed->unschedulable_reason(), "readiness benchmark pending");
  coordinator_->nodes().CloseSession(id, session);
}

// ---------------------------------------------------------------------------
// Logging

TEST_F(AdvertisementTest, ForgedAdvertisementsAreLogged) {
  NodeKey key = NodeKey::Generate();
  ASSERT_NO_FATAL_FAILURE(RegisterNode(key));
  const std::string id = key.node_id();
  LogCapture log;

  // An accepted advertisement logs no rejection.
  ASSERT_TRUE(coordinator_->nodes().Heartbeat(id, HeartbeatWith(advert::SignAdvertisement(BaseAd(6), key))).ok());
  EXPECT_EQ(log.text().find("rejected"), std::string::npos) << log.text();

  v1::SignedAdvertisement tampered = advert::SignAdvertisement(BaseAd(7), key);
  tampered.mutable_advertisement()->back() ^= 0x01;
  ASSERT_FALSE(coordinator_->nodes().Heartbeat(id, HeartbeatWith(tampered)).ok());
  const std::string text = log.text();
  EXPECT_NE(text.find("[warning] advertisement from node " + id + " rejected: bad signature"), std::string::npos)
      << text;

  // A forged registration is logged too, with the peer it came from.
  NodeKey other = NodeKey::Generate();
  v1::SignedAdvertisement forged = advert::SignAdvertisement(BaseAd(5), other);
  forged.mutable_advertisement()->back() ^= 0x01;
  ASSERT_FALSE(coordinator_->nodes().Register(RegisterRequestFor(forged, "forger"), "peer-203.0.113.9").ok());
  EXPECT_NE(log.text().find("registration from peer-203.0.113.9 refused: bad signature"), std::string::npos)
      << log.text();
}

}  // namespace
}  // namespace idlegrid::coordinator

namespace idlegrid::coordinator {
namespace {

// Heartbeat states on the coordinator's clock: online, late once a heartbeat
// is overdue by half an interval, suspect past the timeout (interval × margin,
// 5 s × 3 by default); confirming it offline is the monitor loop's job.
TEST_F(AdvertisementTest, NodeTurnsLateThenSuspectWhenHeartbeatsAreOverdue) {
  NodeKey key = NodeKey::Generate();
  ASSERT_NO_FATAL_FAILURE(RegisterNode(key));
  v1::NodeInfo info;
  info.set_cpu_cores(2);
  auto session = coordinator_->nodes().OpenSession(key.node_id(), info, kPeer);
  ASSERT_TRUE(coordinator_->nodes().Heartbeat(key.node_id(), v1::HeartbeatRequest()).ok());
  clock_.AdvanceMs(5000);
  EXPECT_EQ(Listed(key.node_id())->state(), "online");
  clock_.AdvanceMs(3000);  // 8 s since the last heartbeat: 1.6 intervals
  EXPECT_EQ(Listed(key.node_id())->state(), "late");
  clock_.AdvanceMs(8000);  // 16 s: past the 15 s timeout
  EXPECT_EQ(Listed(key.node_id())->state(), "suspect");
  ASSERT_TRUE(coordinator_->nodes().Heartbeat(key.node_id(), v1::HeartbeatRequest()).ok());
  EXPECT_EQ(Listed(key.node_id())->state(), "online");
}

}  // namespace
}  // namespace idlegrid::coordinator
