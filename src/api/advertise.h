#pragma once
// Where agents and clients are told to find this coordinator: the address in
// agent-join.txt and login.txt (docs/operations.md, "Addresses"). Pure.
#include <string>

#include "common/status.h"

namespace idlegrid::api {

struct AdvertiseInputs {
  std::string advertise;    // --advertise-address: HOST or HOST:PORT ("" when not given)
  std::string listen_host;  // --listen's host ("0.0.0.0", "::", "" are wildcards)
  int grpc_port = 0;        // the port the gRPC API is bound to
  std::string hostname;     // this machine's name (gethostname), for a wildcard listen
};

struct Advertised {
  std::string url;            // https://HOST:PORT (IPv6 in brackets): what agents and clients dial
  std::string local_address;  // HOST:PORT for this machine's own client.yaml
  bool guessed = false;       // derived from the host name: the operator should check it
};

// --advertise-address when given (its port, else the bound one); else the
// listen host unless it is a wildcard; else this machine's host name, which
// is flagged as a guess. InvalidArgument for an --advertise-address that is
// not HOST or HOST:PORT.
Result<Advertised> AdvertisedAddress(const AdvertiseInputs& in);

// The files the coordinator writes for its operator to hand out.
std::string AgentJoinLine(const std::string& url, const std::string& join_token, const std::string& ca_hash);
std::string LoginLine(const std::string& url, const std::string& ca_hash);

}  // namespace idlegrid::api
