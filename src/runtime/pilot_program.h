#pragma once
// The static pilot program's bytes, built into this binary (pilot_program.cc).
#include <string_view>

namespace idlegrid::runtime {

std::string_view PilotProgram();

}  // namespace idlegrid::runtime
