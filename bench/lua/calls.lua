-- Call-heavy Lua for timing martini-lua against plain lua5.4 (bench/lua_overhead.sh):
-- fib(32) makes 7,049,155 calls of a small Lua function. With "coroutine" as the
-- second argument the calls run inside a coroutine (a virtual thread for martini-lua).
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end
local n = tonumber(arg and arg[1] or "") or 32
if arg and arg[2] == "coroutine" then
  print(coroutine.wrap(function() return fib(n) end)())
else
  print(fib(n))
end
