# CORTEX_SANITIZE: build every target (libraries, tests, cortexd) with a
# sanitizer, for the sanitizer stages of CI (scripts/test --sanitize).
#   address  ASan + LSan + UBSan; any UB report is fatal (-fno-sanitize-recover)
#   thread   TSan
# Empty (the default) builds without one. Frame pointers and line tables
# (-g1) are kept so the reports' stacks are whole and name file:line; the
# run-time options (leak checks, halt on error, log paths, suppressions) are
# set by scripts/test, not baked in.
set(CORTEX_SANITIZE "" CACHE STRING "Sanitizer build: empty, address (ASan+UBSan) or thread (TSan)")
set_property(CACHE CORTEX_SANITIZE PROPERTY STRINGS "" address thread)

if(CORTEX_SANITIZE STREQUAL "address")
  set(_cortex_san_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined)
elseif(CORTEX_SANITIZE STREQUAL "thread")
  set(_cortex_san_flags -fsanitize=thread)
elseif(NOT CORTEX_SANITIZE STREQUAL "")
  message(FATAL_ERROR "CORTEX_SANITIZE must be empty, address or thread (got '${CORTEX_SANITIZE}')")
endif()

if(_cortex_san_flags)
  add_compile_options(${_cortex_san_flags} -fno-omit-frame-pointer -g1)
  add_link_options(${_cortex_san_flags})
  message(STATUS "Sanitizer build: ${CORTEX_SANITIZE} (${_cortex_san_flags})")
endif()

# TSan needs CAF itself instrumented: Debian's libcaf_core.so hides the
# mailbox hand-off, so every actor's state would look raced. The TSan build
# links CAF 0.17.6 built with -fsanitize=thread by scripts/caf-tsan (Debian's
# source) from CORTEX_CAF_PREFIX; the binaries find it by their build rpath.
# Its headers are Debian's /usr/include/caf byte for byte (scripts/caf-tsan
# checks every one, build_config.hpp too), so the objects still compile
# against those and ccache's TSan objects stay valid. The other builds keep
# Debian's CAF (messages/, actors/, apps/ find_library it; these cache
# entries, set first, take precedence).
set(CORTEX_CAF_PREFIX "" CACHE PATH "CAF built with -fsanitize=thread (scripts/caf-tsan); TSan build only")
if(CORTEX_SANITIZE STREQUAL "thread")
  if(NOT EXISTS "${CORTEX_CAF_PREFIX}/lib/libcaf_core.so")
    message(FATAL_ERROR "The TSan build needs -DCORTEX_CAF_PREFIX=$(scripts/caf-tsan) (got '${CORTEX_CAF_PREFIX}')")
  endif()
  foreach(_lib core io openssl)
    string(TOUPPER ${_lib} _upper)
    set(CAF_${_upper}_LIBRARY "${CORTEX_CAF_PREFIX}/lib/libcaf_${_lib}.so" CACHE FILEPATH "CAF ${_lib} (TSan)" FORCE)
  endforeach()
  message(STATUS "TSan build: CAF from ${CORTEX_CAF_PREFIX}")
endif()
