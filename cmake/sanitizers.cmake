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
