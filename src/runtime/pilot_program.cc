// The pilot program (src/runtime/pilot/pilot.c, built static as
// idlegrid-pilot) inside the agent's own binary, so an installed agent needs
// no second file: RuncRuntime writes it out once at start (pilot_pool.h).
#include "runtime/pilot_program.h"

#ifndef IDLEGRID_PILOT_PATH
#error "IDLEGRID_PILOT_PATH (the built idlegrid-pilot) must be defined by the build"
#endif

asm(".section .rodata\n"
    ".balign 16\n"
    ".global idlegrid_pilot_program_start\n"
    "idlegrid_pilot_program_start:\n"
    ".incbin \"" IDLEGRID_PILOT_PATH "\"\n"
    ".global idlegrid_pilot_program_end\n"
    "idlegrid_pilot_program_end:\n"
    ".previous\n");

extern "C" const char idlegrid_pilot_program_start[];
extern "C" const char idlegrid_pilot_program_end[];

namespace idlegrid::runtime {

std::string_view PilotProgram() {
  return {idlegrid_pilot_program_start,
          static_cast<size_t>(idlegrid_pilot_program_end - idlegrid_pilot_program_start)};
}

}  // namespace idlegrid::runtime
