# Fails when an object file of the signal path references a symbol that is neither defined
# by the signal-path objects themselves nor on a short allow-list: every call the handler
# makes must land in signal-path code.
# Usage: cmake -DOBJECTS="a.o|b.o" -P signal_path_symbols.cmake
string(REPLACE "|" ";" objects "${OBJECTS}")
# What the compiler may emit for plain memory operations, and errno's address (the handler
# saves and restores errno; __errno_location only returns a TLS address).
# The linker's bounds of the inprof_profiler_text section are addresses the handler compares
# the interrupted pc with, not code.
set(allowed memcpy memset memmove __errno_location _GLOBAL_OFFSET_TABLE_
    __start_inprof_profiler_text __stop_inprof_profiler_text)
set(defined "")
foreach(obj IN LISTS objects)
  execute_process(COMMAND nm --defined-only --format=posix ${obj} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${obj}")
  endif()
  string(REGEX MATCHALL "(^|\n)[^ \n]+" syms "${out}")
  foreach(s IN LISTS syms)
    string(STRIP "${s}" s)
    list(APPEND defined "${s}")
  endforeach()
endforeach()
set(bad "")
foreach(obj IN LISTS objects)
  execute_process(COMMAND nm -u --format=posix ${obj} OUTPUT_VARIABLE out)
  string(REGEX MATCHALL "(^|\n)[^ \n]+" syms "${out}")
  foreach(s IN LISTS syms)
    string(STRIP "${s}" s)
    if(s STREQUAL "")
      continue()
    endif()
    list(FIND allowed "${s}" a)
    list(FIND defined "${s}" d)
    # GCC's aarch64 outline atomics (-moutline-atomics, the default): libgcc's leaf helpers
    # that run one LSE instruction or an LL/SC loop, linked statically into the library.
    if(s MATCHES "^__aarch64_(cas|casp|swp|ldadd|ldclr|ldeor|ldset)(1|2|4|8|16)_(relax|acq|rel|acq_rel|sync)$")
      set(a 0)
    endif()
    if(a EQUAL -1 AND d EQUAL -1)
      list(APPEND bad "${obj}: ${s}")
    endif()
  endforeach()
endforeach()
list(LENGTH objects n)
if(bad)
  string(REPLACE ";" "\n  " text "${bad}")
  message(FATAL_ERROR "signal-path objects call functions that are not allowed:\n  ${text}")
endif()
message(STATUS "signal path: ${n} objects, no disallowed calls")
