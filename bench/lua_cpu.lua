-- A fixed amount of CPU-bound Lua work for bench/lua_overhead.sh: string building, table
-- inserts and sorts, closures and arithmetic (interpreted and compiled code, GC).
--   luajit bench/lua_cpu.lua MODE ROUNDS OUTPUT     MODE: none, lua, mixed
local mode, rounds, output = arg[1] or "none", tonumber(arg[2] or "200"), arg[3] or "/dev/null"
local inprof
if mode ~= "none" then
  inprof = require("inprof")
  inprof.start{output = output, mixed = (mode == "mixed"), quiet = true}
end

local function work(seed)
  local t = {}
  for i = 1, 2000 do t[i] = (seed * i * 7919) % 10007 end
  table.sort(t)
  local parts = {}
  for i = 1, 200 do parts[#parts + 1] = tostring(t[i * 10]) end
  local s = table.concat(parts, ",")
  local acc = 0
  for i = 1, #s do acc = (acc * 31 + s:byte(i)) % 1000003 end
  local f = function(x) return x * 2 + acc end
  for i = 1, 20000 do acc = (acc + f(i)) % 1000003 end
  return acc
end

local sink = 0
for r = 1, rounds do sink = (sink + work(r)) % 1000003 end
if inprof then inprof.stop() end
print(sink)
