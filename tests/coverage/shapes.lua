-- Shapes whose line counts Lua's own line hook gives (tests/coverage_test.py):
-- coroutines, tail calls (to itself and to another function), several functions on one
-- line, callbacks from C, errors caught two frames up, recursion, while and repeat
-- loops, a method, a metamethod, a function never called.
local function one() return 1 end local function two() return one() + one() end
local function countdown(n)
  if n == 0 then
    return 0
  end
  return countdown(n - 1)
end
local function fact(n)
  if n <= 1 then return 1 end
  return n * fact(n - 1)
end
local function via(n)
  return fact(n)
end
local function never()
  return "never"
end
local function fail(depth)
  if depth == 0 then
    error("deep")
  end
  fail(depth - 1)
end
local Account = {}
Account.__index = Account
function Account.new(balance)
  return setmetatable({balance = balance}, Account)
end
function Account:deposit(v)
  self.balance = self.balance + v
  return self
end
local defaults = setmetatable({}, {__index = function(_, key)
  return key .. "!"
end})
local gen = coroutine.wrap(function()
  for i = 1, 3 do
    coroutine.yield(i)
  end
end)
local total = 0
for _ = 1, 3 do
  total = total + gen()
end
local i = 0
while i < 4 do
  i = i + 1
end
repeat
  i = i - 1
until i == 0
local caught = 0
for d = 0, 2 do
  if not pcall(fail, d) then
    caught = caught + 1
  end
end
local words = string.gsub("a b c", "%a", function(c)
  return c:upper()
end)
local a = Account.new(1):deposit(2):deposit(3)
print(two(), countdown(50), via(5), total, caught, words, a.balance, defaults.x, i)
