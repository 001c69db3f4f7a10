-- policy(ma, bb, bx, dma, dbb, dbx) returns an item's max attempts and
-- backoff: its own (the values of its fields ma, bb, bx) where set, else
-- the caller's.

local function policy(ma, bb, bx, dma, dbb, dbx)
  return tonumber(ma) or dma, tonumber(bb) or dbb, tonumber(bx) or dbx
end
