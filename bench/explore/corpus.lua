-- The seeded-bug corpus: each screen's folder, its grade and the check its bug breaks.
-- harness.lua (scripts/bench explore) explores each, and its fixed/ variant, over seeds;
-- README.md says how to add one.
return {
  { name = "pager", grade = "easy", check = "invariant pageInRange" },
  { name = "todo", grade = "easy", check = "invariant remainingCounts" },
  { name = "signin", grade = "easy", check = "invariant sentOnlyAnEmail" },
  { name = "upload", grade = "medium", check = "invariant barOnlyWhileUploading" },
  { name = "search", grade = "medium", check = "invariant resultsMatchQuery" },
  { name = "seats", grade = "medium", check = "invariant noOverbooking" },
  { name = "session", grade = "medium", check = "invariant expiresOnTime" },
  { name = "wizard", grade = "hard", check = "invariant totalAddsUp" },
  { name = "bundle", grade = "hard", check = "invariant pricedByTier" },
  { name = "payment", grade = "hard", check = "invariant chargedOnce" },
}
