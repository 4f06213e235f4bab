#include "verify/adaptive.h"

#include <algorithm>
#include <limits>

namespace idlegrid::verify {

ReplicationChoice ChooseReplication(const AdaptiveRule& rule, uint32_t consecutive_valid, double uniform_draw) {
  ReplicationChoice choice;
  if (consecutive_valid < rule.trust_threshold || consecutive_valid == 0) {
    choice.probability = 1;
    choice.replicate = true;
    return choice;
  }
  choice.trusted = true;
  choice.probability = std::max(1.0 / double(consecutive_valid), rule.audit_floor);
  choice.probability = std::min(choice.probability, 1.0);
  choice.replicate = uniform_draw < choice.probability;
  return choice;
}

uint32_t CountAfterVerification(uint32_t consecutive_valid, bool valid) {
  if (!valid) return 0;
  return consecutive_valid == std::numeric_limits<uint32_t>::max() ? consecutive_valid : consecutive_valid + 1;
}

}  // namespace idlegrid::verify
