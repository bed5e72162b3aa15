// MoonflowInspector builds only with Moonflow's `Inspector` trait on, which brings Hummingbird
// and SwiftNIO. An app that links it names the trait in its dependency (docs/embedding.md);
// without it, this says so before "no such module 'Hummingbird'" does.
#if !Inspector
#error("MoonflowInspector needs Moonflow's Inspector trait: .package(..., traits: [\"Inspector\"]) (docs/embedding.md)")
#endif
