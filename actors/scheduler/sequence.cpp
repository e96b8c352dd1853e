#include "actors/scheduler/sequence.hpp"

namespace cortex {

const char* to_string(seq_state s) {
  switch (s) {
    case seq_state::waiting: return "waiting";
    case seq_state::running: return "running";
    case seq_state::preempted: return "preempted";
    case seq_state::finished: return "finished";
  }
  return "?";
}

}  // namespace cortex
