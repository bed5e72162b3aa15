// MoonflowServe builds only with Moonflow's `Inspector` trait on (Hummingbird, SwiftNIO), as
// MoonflowInspector does; the default traits turn it on.
#if !Inspector
#error("MoonflowServe needs Moonflow's Inspector trait (the default traits turn it on)")
#endif
