"""Leaf helpers: small modules any layer of verifybench may use (safe file writes and names, a progress
line for a long phase, the cases' content hash, how a field path names a key, `${VAR}` in options). A leaf
helper imports nothing from verifybench but other leaf helpers, `cases` and `errors`, so nothing it does
can reach up into a loader, a verifier or a run. Import each by its module
(`from verifybench._util.safeio import write_text_atomic`); this package re-exports nothing."""
