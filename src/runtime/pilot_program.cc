// The pilot program (src/runtime/pilot/pilot.c, built static as
// idlegrid-pilot) inside the agent's own binary, so an installed agent needs
// no second file: RuncRuntime writes it out once at start (pilot_pool.h).
#include "runtime/pilot_program.h"

#include "common/embed_file.h"

#ifndef IDLEGRID_PILOT_PATH
#error "IDLEGRID_PILOT_PATH (the built idlegrid-pilot) must be defined by the build"
#endif

IDLEGRID_EMBED_FILE(pilot_program, IDLEGRID_PILOT_PATH);

namespace idlegrid::runtime {

std::string_view PilotProgram() { return IDLEGRID_EMBEDDED(pilot_program); }

}  // namespace idlegrid::runtime
