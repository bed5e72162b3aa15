/// Which clock a host's timers run on: real time, or the virtual clock a test or
/// `moonflow run --clock virtual` moves by hand (`VirtualClockDriver`). Apps name it
/// `FeatureHost.Clock` through `import MoonflowHostTools`; a run's description and the
/// inspector's pipe carry it.
public enum FeatureClock: String, Sendable, CaseIterable {
    case real, virtual
}
