// The test store's users compare states with `StateDiff` and drive `FeatureHost`:
// both come with `import MoonflowTesting`. StateDiff lives in MoonflowEvents, which the
// inspector shares it from; only that one type of MoonflowEvents is handed on here.
@_exported import MoonflowHost
@_exported import enum MoonflowEvents.StateDiff
