-- The 1,000-row table the bench converts, publishes and encodes:
-- { rows = { {id=1, name="user1", email="user1@example.com", active=true, score=1.5}, ... } }
-- Shared by rows.lua (cjson under lua5.4), LuaBench (conversion to LuaValue)
-- and rows_feature.lua (publishing to a Swift observer).
return function(n)
  local rows = {}
  for i = 1, n do
    rows[i] = { id = i, name = "user" .. i, email = "user" .. i .. "@example.com", active = true, score = i * 1.5 }
  end
  return { rows = rows }
end
