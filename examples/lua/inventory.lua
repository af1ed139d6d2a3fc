-- A small program for martini-lua: a binary search tree holds the stock, orders come
-- from a coroutine, an order that finds too little stock raises an error that pcall
-- catches two frames up, and the tree lookup recurses in tail calls.
--
--   martini-lua --client cgprof examples/lua/inventory.lua
--
-- It places 120 orders for 7 items, 30 of each in stock, 1 to 3 at a time; the output
-- says how many ran out of stock. Every count below is fixed, so the tests know them.

local Tree = {}
Tree.__index = Tree

function Tree.new()
  return setmetatable({ root = nil }, Tree)
end

local function insert(node, key, value)
  if node == nil then return { key = key, value = value } end
  if key < node.key then
    node.left = insert(node.left, key, value)
  elseif key > node.key then
    node.right = insert(node.right, key, value)
  else
    node.value = value
  end
  return node
end

function Tree:put(key, value)
  self.root = insert(self.root, key, value)
end

local function find(node, key)
  if node == nil then return nil end
  if key == node.key then return node.value end
  if key < node.key then return find(node.left, key) end
  return find(node.right, key)
end

function Tree:get(key)
  return find(self.root, key)
end

local function take(stock, item, qty)
  local have = stock:get(item)
  if have < qty then error("out of stock: " .. item, 2) end
  stock:put(item, have - qty)
end

local function reserve(stock, item, qty)
  take(stock, item, qty)
  return qty
end

local function orders(n)
  for i = 1, n do
    coroutine.yield("item" .. (i % 7), 1 + i % 3)
  end
end

local stock = Tree.new()
for i = 0, 6 do stock:put("item" .. i, 30) end

local placed, failed = 0, 0
local source = coroutine.wrap(function() orders(120) end)
for _ = 1, 120 do
  local item, qty = source()
  if pcall(reserve, stock, item, qty) then
    placed = placed + 1
  else
    failed = failed + 1
  end
end
print(string.format("inventory: %d orders, %d out of stock", placed + failed, failed))
