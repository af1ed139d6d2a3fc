-- Call-heavy Lua for timing martini-lua against plain lua5.4 (bench/lua_overhead.sh):
-- fib(32) makes 7,049,155 calls of a small Lua function.
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end
print(fib(tonumber(arg and arg[1] or "") or 32))
