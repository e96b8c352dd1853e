// Where fuzz targets find ../shared (vocabularies): $CORTEX_SHARED_DIR when
// set, else the folder CMake was configured with.
#pragma once

#include <cstdlib>
#include <string>

namespace cortex::fuzz {

inline std::string shared_dir() {
  const char* env = std::getenv("CORTEX_SHARED_DIR");
  return env && *env ? env : CORTEX_SHARED_DIR;
}

}  // namespace cortex::fuzz
