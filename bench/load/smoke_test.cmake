# Smoke test of cortex_load (run by CTest with cmake -P): a small in-process
# load must end with every request ok, and the JSON must hold the figures.
#   -DCORTEX_LOAD=<exe> -DMODEL=<gguf> -DOUT=<json file>
foreach(v CORTEX_LOAD MODEL OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "smoke_test.cmake needs -D${v}=...")
  endif()
endforeach()

set(streams 4)
set(requests 8)
set(output 16)
execute_process(
  COMMAND ${CORTEX_LOAD} --in-process --model ${MODEL} --streams ${streams} --requests ${requests}
          --prompt-tokens 32 --output-tokens ${output} --threads 2 --json ${OUT}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cortex_load exited with ${rc} (1 = some request did not finish with length/stop)")
endif()

file(READ ${OUT} doc)
foreach(path "mode" "load;streams" "results;wall_s" "results;tok_per_s" "results;req_per_s" "results;requests_ok"
             "results;completion_tokens" "results;ttft_ms;p50" "results;ttft_ms;p90" "results;ttft_ms;p99"
             "results;itl_ms;p50" "results;itl_ms;p90" "results;itl_ms;p99" "results;errors" "results;cpu_s"
             "load_average" "requests")
  string(JSON value ERROR_VARIABLE err GET "${doc}" ${path})
  if(err)
    message(FATAL_ERROR "${OUT} lacks '${path}': ${err}")
  endif()
endforeach()

string(JSON ok GET "${doc}" results requests_ok)
string(JSON tokens GET "${doc}" results completion_tokens)
string(JSON n_errors LENGTH "${doc}" results errors)
string(JSON n_ttft GET "${doc}" results ttft_ms n)
math(EXPR want_tokens "${requests} * ${output}")
if(NOT ok EQUAL requests OR NOT tokens EQUAL want_tokens OR NOT n_errors EQUAL 0 OR NOT n_ttft EQUAL requests)
  message(FATAL_ERROR "expected ${requests} ok requests, ${want_tokens} tokens, no errors, ${requests} TTFTs; "
                      "got ${ok}, ${tokens}, ${n_errors} error kinds, ${n_ttft} TTFTs")
endif()
message(STATUS "cortex_load smoke: ${ok} requests, ${tokens} tokens ok")
