local function square(x)
  return x * x
end
local function check(n)
  if n > 2 then
    error("too big")
  end
  return n
end
local total = 0
for i = 1, 10 do
  total = total + square(i)
end
local failures = 0
for i = 1, 5 do
  local ok = pcall(check, i)
  if not ok then
    failures = failures + 1
  end
end
print(total, failures)
