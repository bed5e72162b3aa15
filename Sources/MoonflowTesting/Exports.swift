// The test store's users compare states with `StateDiff` and drive `FeatureHost`:
// both come with `import MoonflowTesting`.
@_exported import MoonflowHost
