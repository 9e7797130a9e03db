# Web resources (the flame graph's script and style, the timeline page) are real files under a
# component's resources/ folder, so editors, linters and `node --check` see them as what they
# are; the build turns them into C++ arrays. A CMake script writes the .cpp, so the step needs
# nothing but CMake itself and runs on the build host in every lane (cross builds, sanitizer
# and fuzz builds alike).
#
#   inprof_embed_resources(TARGET NAMESPACE OUTPUT SYMBOL FILE [SYMBOL FILE ...])
#
# defines `extern const char SYMBOL[]` in NAMESPACE for each FILE (relative to the current
# source directory): its bytes exactly, with a terminating NUL, in OUTPUT (a .cpp in the
# current binary directory) added to TARGET's sources.
set(INPROF_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_resources.cmake)

function(inprof_embed_resources target namespace output)
  set(pairs ${ARGN})
  list(LENGTH pairs n)
  math(EXPR odd "${n} % 2")
  if(n EQUAL 0 OR odd)
    message(FATAL_ERROR "inprof_embed_resources: SYMBOL FILE pairs expected, got: ${ARGN}")
  endif()
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${output})
  set(symbols)
  set(files)
  while(pairs)
    list(POP_FRONT pairs symbol file)
    list(APPEND symbols ${symbol})
    list(APPEND files ${CMAKE_CURRENT_SOURCE_DIR}/${file})
  endwhile()
  # The lists cross the command line joined with '|' (a ';' would split the argument).
  string(REPLACE ";" "|" symbol_arg "${symbols}")
  string(REPLACE ";" "|" file_arg "${files}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${out} -DNAMESPACE=${namespace} -DSYMBOLS=${symbol_arg}
            -DFILES=${file_arg} -P ${INPROF_EMBED_SCRIPT}
    DEPENDS ${files} ${INPROF_EMBED_SCRIPT}
    COMMENT "Embedding ${output}"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
