# Run by inprof_embed_resources (embed.cmake) as `cmake -P`: writes OUTPUT, a .cpp that defines
# one NUL-terminated char array per file in FILES, named by the same position in SYMBOLS.
# Every byte is written as a \xNN escape rather than inside a raw string literal: any byte is
# safe that way (no delimiter to collide with, no line-ending surprises), and the array holds
# the file's bytes exactly.
string(REPLACE "|" ";" symbols "${SYMBOLS}")
string(REPLACE "|" ";" files "${FILES}")
list(LENGTH symbols n)
math(EXPR last "${n} - 1")

set(text "// Generated from:\n")
foreach(file IN LISTS files)
  string(APPEND text "//   ${file}\n")
endforeach()
string(APPEND text "// by cmake/embed_resources.cmake at build time; edit those files, not this one.\n\n"
                   "namespace ${NAMESPACE} {\n")
foreach(i RANGE ${last})
  list(GET symbols ${i} symbol)
  list(GET files ${i} file)
  file(READ ${file} hex HEX)
  string(LENGTH "${hex}" digits)
  math(EXPR bytes "${digits} / 2")
  # 32 bytes a line, one string literal each (adjacent literals are joined by the compiler).
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" hex "${hex}")
  string(REPEAT "[\\]x.." 32 line)
  string(REGEX REPLACE "(${line})" "\\1\"\n    \"" hex "${hex}")
  string(APPEND text "\n// ${bytes} bytes.\nextern const char ${symbol}[] =\n    \"${hex}\";\n")
endforeach()
string(APPEND text "\n}  // namespace ${NAMESPACE}\n")

file(WRITE ${OUTPUT} "${text}")
