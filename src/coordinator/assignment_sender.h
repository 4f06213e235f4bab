#pragma once
// Turns a committed attempt into the Assign command its node's agent runs:
// the task's own spec, the image (by digest, archive or blob by blob), its
// signatures, the lease epoch, an artifact token and the checkpoint to resume
// from. A task cancelled meanwhile is told to stop instead. Used by the
// dispatcher after a commit and by the node table when an agent reconnects
// (assignments it may have missed are sent again; agents ignore ids they know).
// No lock of its own: the pieces it reads are thread-safe.
#include "common/status.h"
#include "coordinator/agent_session.h"
#include "coordinator/artifact_rights.h"
#include "coordinator/image_catalog.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class AssignmentSender {
 public:
  AssignmentSender(store::Store* store, ImageCatalog* images, ArtifactRights* rights, AgentSessions* sessions)
      : store_(store), images_(images), rights_(rights), sessions_(sessions) {}

  // `job`: the attempt's job as just read (a batch reads each job once);
  // null: read here. Unavailable when the node is not connected (the
  // attempt then ends by the acknowledgement timeout and is placed again).
  Status Send(const store::NewAttempt& attempt, const v1::Job* job = nullptr);

 private:
  store::Store* const store_;
  ImageCatalog* const images_;
  ArtifactRights* const rights_;
  AgentSessions* const sessions_;
};

}  // namespace idlegrid::coordinator
