#include "messages/request.hpp"

namespace cortex {

const char* finish_reason_name(finish_reason r) {
  switch (r) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::cancelled: return "cancelled";
    case finish_reason::deadline: return "deadline";
    case finish_reason::shutdown: return "shutdown";
    case finish_reason::client_gone: return "client_gone";
    case finish_reason::error: return "error";
  }
  return "error";
}

}  // namespace cortex
