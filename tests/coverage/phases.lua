local function step(i)
  return i + 1
end
local n = 0
for _ = 1, 3 do
  n = step(n)
end
io.write("ready\n")
io.flush()
io.read()
for _ = 1, 4 do
  n = step(n)
end
print(n)
