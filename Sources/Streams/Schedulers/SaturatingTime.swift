/// Time arithmetic that cannot trap.
///
/// Delays and times reach the schedulers from outside the program: input lines
/// (`{"at": ...}`), recordings, prompt commands and Lua numbers (`mf.timer(ms)`), any of
/// which may be near `Int.max`. A sum past the end of `Int` is held at the end: a
/// timer due at `Int.max` milliseconds (292 million years) is a timer that never fires,
/// which is what such a number means, and the process lives on.
extension Int {
    /// `self + other`, held at `Int.max` or `Int.min` where the sum would overflow.
    ///
    /// ```swift
    /// Int.max.saturatingAdd(1)   // Int.max
    /// 250.saturatingAdd(50)      // 300
    /// ```
    @inlinable
    package func saturatingAdd(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
