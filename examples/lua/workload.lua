-- A Lua workload for examples/lua_host.c: pure Lua hot spots, and native work called from Lua
-- through the C API (host.crunch) and through the FFI (host_ffi_crunch), so a mixed profile
-- shows Lua frames above the native ones.
local ffi = require("ffi")
ffi.cdef("double host_ffi_crunch(double seconds);")

local function tokenize(n)
  local count = 0
  for i = 1, n do
    if (i * 7919) % 13 < 6 then count = count + 1 end  -- LUA-TOKENIZE-LINE
  end
  return count
end

function parse_records(rounds)
  local total = 0
  for r = 1, rounds do total = total + tokenize(20000) end
  return total
end

-- (Not `return f(x)`: a Lua tail call replaces the caller's frame, so the caller would not be
-- in the stack.)
function checksum(seconds)
  local sum = host.crunch(seconds)  -- LUA-CAPI-CALL-LINE
  return sum
end

function ffi_checksum(seconds)
  local sum = ffi.C.host_ffi_crunch(seconds)  -- LUA-FFI-CALL-LINE
  return sum
end

local seconds = tonumber(os.getenv("WORKLOAD_SECONDS") or "2")
local t0 = os.clock()
while os.clock() - t0 < seconds do
  parse_records(100)
  checksum(0.02)
  ffi_checksum(0.02)
end
