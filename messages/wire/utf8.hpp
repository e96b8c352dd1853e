// UTF-8 well-formedness, as the wire codec requires it of client strings.
#pragma once

#include <string_view>

namespace cortex::wire {

// True when `s` is well-formed UTF-8: no stray continuation bytes, no
// truncated sequences, no overlong forms, no surrogates, nothing > U+10FFFF.
bool is_valid_utf8(std::string_view s);

}  // namespace cortex::wire
