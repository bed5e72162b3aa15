-- cjson.encode of the 1,000-row table under lua5.4: what the bench holds
-- converting the same table to Swift, and publishing it, against.
-- Usage: lua5.4 bench/rows.lua [ROWS] [RUNS]
-- Prints: cjson_encode_us <median µs per encode> bytes=<length> runs=<RUNS>
--         cjson_decode_us <median µs per decode of that text>
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
local now = dofile(dir .. "/clock.lua")
local cjson = require "cjson"

local n = tonumber(arg[1]) or 1000
local runs = tonumber(arg[2]) or 21
local state = dofile(dir .. "/rows_data.lua")(n)
local inner = 20  -- encodes per sample, so one sample is well above the clock's resolution

-- The median µs of `runs` samples of `inner` calls of f.
local function median_us(f)
  local samples = {}
  for r = 1, runs do
    local t0 = now()
    for _ = 1, inner do f() end
    samples[r] = (now() - t0) * 1e6 / inner
  end
  table.sort(samples)
  return samples[(runs + 1) // 2]
end

local text = cjson.encode(state)
print(("cjson_encode_us %.1f bytes=%d runs=%d"):format(median_us(function() cjson.encode(state) end), #text, runs))
print(("cjson_decode_us %.1f"):format(median_us(function() cjson.decode(text) end)))
