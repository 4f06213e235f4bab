#pragma once
// Runs the coordinator process: data directory, lock, PKI, store, gRPC and
// HTTPS listeners, until SIGINT/SIGTERM.
#include <string>

#include "pki/pki.h"

#include "coordinator/coordinator.h"

namespace idlegrid::api {

struct CoordinatorConfig {
  std::string data_dir = "./idlegrid-data/coordinator";
  // The store: a SQLite file or a postgresql:// URL (several coordinators may
  // share one PostgreSQL database). Empty: data_dir/state.db.
  std::string db;
  std::string policy_file;
  // PKI, artifacts and secrets; coordinators sharing one PostgreSQL database
  // point this at one shared directory. Default: data_dir.
  std::string shared_dir;  // scheduling policies (docs/scheduling.md); default: the built-ins
  std::string grpc_listen = "127.0.0.1:7443";
  std::string http_listen = "127.0.0.1:7080";
  std::vector<std::string> tls_names;    // extra DNS names / IPs for the server certificate
  pki::ServerCertLifetime tls_lifetime;  // the server certificate's, renewed while running
  // HOST[:PORT] agents and clients dial (agent-join.txt, login.txt); default:
  // the --listen host, or this machine's name when that is a wildcard.
  std::string advertise_address;
  // Record this coordinator's CA as the one the database's nodes pin, even
  // though another is recorded (the old CA was lost).
  bool adopt_new_ca = false;
  std::string bench_binary;      // static readiness benchmark; default: idlegrid-bench beside this binary
  std::string gpu_bench_binary;  // GPU readiness benchmark; default: idlegrid-gpu-bench beside the former
  // Public-key files (docs/containment.md, Signatures) whose signatures make an image
  // acceptable at submit; with options.require_signed_images.
  std::vector<std::string> trusted_image_key_files;
  coordinator::Options options;
  // OCI registries (docs/registries.md): the allow-list (--allow-registry
  // HOST[:PORT], repeatable; options.registries gets it checked), CA files per
  // registry (--registry-ca HOST[:PORT]=FILE) and the skopeo binary that reads
  // them.
  std::vector<std::string> allow_registries;
  std::vector<std::string> registry_cas;
  std::string skopeo = "skopeo";
};

// Returns the process exit code (0 clean shutdown, 1 failure).
int RunCoordinator(const CoordinatorConfig& config);

}  // namespace idlegrid::api
