import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua

// From `send` on the main actor to a `FeatureViewModel` showing the new state, on a
// `MainActorHost` (real clock: `send` has reduced and the model has applied the state when it
// returns), for a form (2 fields), plugins/counter, and a cart of 5, 50 and 500 lines where one
// line's quantity changes per send. Each send is timed alone; the median and p99 of those, and
// the 500-line cart against the 5-line one: the cost should follow the change, not the state.
// The counter and the 500-line cart also with no view model (an empty state listener: the
// floor the runtime sets). Last, the 500-line cart into a view that is not a `PatchableView`
// (decoded whole per send). `MOONFLOW_BENCH_ROWS="cart, 500 lines"` runs one row alone.

func viewModelBench() {
    let sends = BenchEnvironment.scaled(4_000)
    let box = ResultBox()
    Task { @MainActor in box.result = Result { try measureViewModels(sends: sends) } }
    while box.result == nil { RunLoop.main.run(until: Date().addingTimeInterval(0.005)) }
    guard case .success(let rows)? = box.result else {
        if case .failure(let error)? = box.result { print("  view model: \(error)") }
        return
    }
    print("send -> updated view on a MainActorHost (real clock), \(sends) sends each, each timed alone")
    var medians: [String: Double] = [:]
    for (name, micros) in rows {
        let sorted = micros.sorted()
        let median = sorted[sorted.count / 2]
        medians[name] = median
        print(row("\(name): median", median, "µs"))
        print(row("\(name): p99", sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))], "µs"))
    }
    print(
        "  cart 500 lines / cart 5 lines (medians)       \(ratio(medians["cart, 500 lines"], medians["cart, 5 lines"]))"
    )
    print("  targets: cart 500 lines median <= 10 µs, p99 <= 50 µs; 500 / 5 lines <= 1.5x; counter median <= 5 µs")
    stateKeptBench()
}

// What a big state costs to keep: a cart grown to 5,000 lines by `add` actions (the shop app's),
// its Lua table (the Lua heap it added), what the host keeps of it in Swift besides (the C heap
// it added, less the Lua heap's share), and the view model's decoded view; the whole against
// the Lua table alone.
private func stateKeptBench() {
    guard wanted("state kept") else { return }
    let lines = BenchEnvironment.scaled(5_000)
    let box = KeptBox()
    Task { @MainActor in
        do { box.result = .success(try await measureStateKept(lines: lines)) } catch { box.result = .failure(error) }
    }
    while box.result == nil { RunLoop.main.run(until: Date().addingTimeInterval(0.005)) }
    guard case .success(let kept)? = box.result else {
        if case .failure(let error)? = box.result { print("  state kept: \(error)") }
        return
    }
    func kb(_ bytes: Int) -> String { String(format: "%.1f KB", Double(bytes) / 1024) }
    print("a cart of \(lines) lines added by actions, then a view model of it (heaps after a full collection)")
    print("  the same lines in a plain Lua table              \(kb(kept.plain))")
    print("  the feature's Lua heap (its state, and beside it) \(kb(kept.lua))")
    print("  kept in Swift by the host (C heap - Lua heap)     \(kb(kept.swift))")
    print("  the view model's view (C heap)                    \(kb(kept.view))")
    let total = kept.lua + kept.swift + kept.view
    print("  all of it / the plain table                       \(ratio(Double(total), Double(kept.plain)))")
    print("  target: at most 1.5x")
}

private struct StateKept {
    let plain: Int
    let lua: Int
    let swift: Int
    let view: Int
}

private final class KeptBox: @unchecked Sendable {
    private let lock = NSLock()
    private var _result: Result<StateKept, any Error>?
    var result: Result<StateKept, any Error>? {
        get { lock.withLock { _result } }
        set { lock.withLock { _result = newValue } }
    }
}

private let growingCartSource = """
    local mf = require "moonflow"
    return mf.feature {
      name = "bigcart",
      initial = { lines = mf.array() },
      state = { lines = { "list", of = { sku = "string", name = "string", price = "integer", qty = "integer" } } },
      actions = { add = { sku = "string", name = "string", price = "integer" } },
      mutations = { added = { sku = "string", name = "string", price = "integer" } },
      handle = function(a) return { type = "added", sku = a.sku, name = a.name, price = a.price } end,
      reduce = function(state, m)
        state.lines[#state.lines + 1] = { sku = m.sku, name = m.name, price = m.price, qty = 1 }
        return state
      end,
    }
    """

private struct GrowingCartView: Decodable, Sendable, PatchableView {
    var lines: [Line]
    mutating func patch(_ path: ArraySlice<LuaValue>, to value: LuaValue) throws -> Bool {
        switch path.first?.stringValue {
        case "lines": return try Self.patch(&self.lines, path.dropFirst(), to: value)
        default: return false
        }
    }
    struct Line: Decodable, Sendable, PatchableView {
        var sku: String
        var name: String
        var price: Int
        var qty: Int
        mutating func patch(_ path: ArraySlice<LuaValue>, to value: LuaValue) throws -> Bool {
            switch path.first?.stringValue {
            case "sku": return try Self.patch(&self.sku, path.dropFirst(), to: value)
            case "name": return try Self.patch(&self.name, path.dropFirst(), to: value)
            case "price": return try Self.patch(&self.price, path.dropFirst(), to: value)
            case "qty": return try Self.patch(&self.qty, path.dropFirst(), to: value)
            default: return false
            }
        }
    }
}

@MainActor
private func measureStateKept(lines: Int) async throws -> StateKept {
    let host = try MainActorHost(configuration: .init(searchPaths: [], clock: .real))
    let lua = host.host.lua
    // On the main actor, this host's state executor.
    func heaps() -> (c: Int, lua: Int) {
        lua.collectGarbage()
        return (LuaState.cHeapInUse ?? 0, lua.memoryInUse)
    }
    // The same lines as a plain Lua table, for the state's own size (before the cart holds
    // its strings, which Lua would share).
    _ = try lua.run(
        string: """
            local lines = {}
            for i = 1, \(lines) do
              lines[i] = { sku = "sku-" .. i, name = "product number " .. i, price = 100 + i, qty = 1 }
            end
            BENCH_PLAIN_CART = { lines = lines }
            """, name: "=bench")
    let plainHeaps = heaps()
    _ = try lua.run(string: "BENCH_PLAIN_CART = nil", name: "=bench")
    let plain = plainHeaps.lua - heaps().lua
    let cart = try host.load(name: "bigcart", source: growingCartSource)
    cart.start()
    let empty = heaps()
    for i in 1...lines {
        try cart.send([
            "type": "add", "sku": .string(LuaString("sku-\(i)")), "name": .string(LuaString("product number \(i)")),
            "price": LuaValue(100 + i),
        ])
    }
    // A drain past 4 ms hands main back and goes on at a later turn (a loaded machine's): the
    // sends queued behind it are reduced then.
    try await cart.idle()
    let grown = heaps()
    let model = try cart.model(as: GrowingCartView.self, actions: LuaValue.self)
    precondition(model.view.lines.count == lines, "the view does not show every line")
    let viewed = heaps()
    let kept = StateKept(
        plain: plain, lua: grown.lua - empty.lua, swift: (grown.c - empty.c) - (grown.lua - empty.lua),
        view: viewed.c - grown.c)
    model.stop()
    cart.dispose()
    return kept
}

private final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var _result: Result<[(String, [Double])], any Error>?
    var result: Result<[(String, [Double])], any Error>? {
        get { lock.withLock { _result } }
        set { lock.withLock { _result = newValue } }
    }
}

// The views as `moonflow types --swift` writes them (a `PatchableView` each: a change is written
// in place), and the cart once more as a plain `Decodable`, decoded whole per change.
private struct CounterView: Decodable, Sendable, PatchableView {
    var count: Int
    mutating func patch(_ path: ArraySlice<LuaValue>, to value: LuaValue) throws -> Bool {
        switch path.first?.stringValue {
        case "count": return try Self.patch(&self.count, path.dropFirst(), to: value)
        default: return false
        }
    }
}

private struct FormView: Decodable, Sendable, PatchableView {
    var name: String
    var email: String
    mutating func patch(_ path: ArraySlice<LuaValue>, to value: LuaValue) throws -> Bool {
        switch path.first?.stringValue {
        case "name": return try Self.patch(&self.name, path.dropFirst(), to: value)
        case "email": return try Self.patch(&self.email, path.dropFirst(), to: value)
        default: return false
        }
    }
}

private struct CartView: Decodable, Sendable, PatchableView {
    var items: [Line]
    var total: Int
    mutating func patch(_ path: ArraySlice<LuaValue>, to value: LuaValue) throws -> Bool {
        switch path.first?.stringValue {
        case "items": return try Self.patch(&self.items, path.dropFirst(), to: value)
        case "total": return try Self.patch(&self.total, path.dropFirst(), to: value)
        default: return false
        }
    }

    struct Line: Decodable, Sendable, PatchableView {
        var sku: String
        var price: Int
        var qty: Int
        mutating func patch(_ path: ArraySlice<LuaValue>, to value: LuaValue) throws -> Bool {
            switch path.first?.stringValue {
            case "sku": return try Self.patch(&self.sku, path.dropFirst(), to: value)
            case "price": return try Self.patch(&self.price, path.dropFirst(), to: value)
            case "qty": return try Self.patch(&self.qty, path.dropFirst(), to: value)
            default: return false
            }
        }
    }
}

private struct PlainCartView: Decodable, Sendable {
    var items: [Line]
    var total: Int
    struct Line: Decodable, Sendable { var sku: String; var price: Int; var qty: Int }
}

private let formSource = """
    local mf = require "moonflow"
    return mf.feature {
      name = "form",
      initial = { name = "", email = "" },
      state = { name = "string", email = "string" },
      actions = { setName = { text = "string" } },
      mutations = { name = { text = "string" } },
      handle = function(a) return { type = "name", text = a.text } end,
      reduce = function(state, m) state.name = m.text; return state end,
    }
    """

/// A cart of `lines` lines; `setQty` changes one line's quantity and the total by the difference.
private func cartSource(lines: Int) -> String {
    """
    local mf = require "moonflow"
    local items, total = mf.array(), 0
    for i = 1, \(lines) do
      items[i] = { sku = "sku-" .. i, price = 100 + i, qty = 1 }
      total = total + 100 + i
    end
    return mf.feature {
      name = "cart",
      initial = { items = items, total = total },
      state = { items = { "list", of = { sku = "string", price = "integer", qty = "integer" } }, total = "integer" },
      actions = { setQty = { line = "integer", qty = "integer" } },
      mutations = { qty = { line = "integer", qty = "integer" } },
      handle = function(a) return { type = "qty", line = a.line, qty = a.qty } end,
      reduce = function(state, m)
        local line = state.items[m.line]
        state.total = state.total + (m.qty - line.qty) * line.price
        line.qty = m.qty
        return state
      end,
    }
    """
}

/// Times `sends` calls of `step(k)` after a tenth as many unmeasured ones; `step` sends and
/// reads the changed value back from the view, trapping when it is not there.
@MainActor
private func timed(_ sends: Int, _ step: (Int) -> Void) -> [Double] {
    for k in 0..<max(1, sends / 10) { step(k) }
    var micros: [Double] = []
    micros.reserveCapacity(sends)
    for k in 0..<sends {
        let start = DispatchTime.now().uptimeNanoseconds
        step(sends + k)
        micros.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
    }
    return micros
}

/// Whether the row `name` runs: `MOONFLOW_BENCH_ROWS="cart, 500 lines"` runs that one alone,
/// to profile it.
private func wanted(_ name: String) -> Bool {
    guard let only = BenchEnvironment.variables["MOONFLOW_BENCH_ROWS"] else { return true }
    return name == only
}

@MainActor
private func measureViewModels(sends: Int) throws -> [(String, [Double])] {
    let host = try MainActorHost(configuration: .init(searchPaths: [BenchEnvironment.path("plugins")], clock: .real))
    var rows: [(String, [Double])] = []

    if wanted("form, 2 fields") {
        let form = try host.load(name: "form", source: formSource)
        form.start()
        let formModel = try form.model(as: FormView.self, actions: LuaValue.self)
        let names = (0..<64).map { "name \($0)" }
        rows.append(
            (
                "form, 2 fields",
                timed(sends) { k in
                    formModel.send(["type": "setName", "text": .string(LuaString(names[k % 64]))])
                    precondition(formModel.view.name == names[k % 64], "the view did not change")
                }
            ))
        formModel.stop()
        form.dispose()
    }

    if wanted("counter") {
        let counter = try host.load("counter")
        counter.start()
        let counterModel = try counter.model(as: CounterView.self, actions: LuaValue.self)
        rows.append(
            (
                "counter",
                timed(sends) { k in
                    let before = counterModel.view.count
                    counterModel.send(["type": "increment"])
                    precondition(counterModel.view.count == before + 1, "the view did not change")
                }
            ))
        counterModel.stop()
        counter.dispose()
    }
    if wanted("counter, no view model") {
        let counter = try host.load("counter")
        let token = counter.observe(kinds: .state) { _ in }
        counter.start()
        rows.append(
            (
                "counter, no view model",
                timed(sends) { _ in
                    do { try counter.send(["type": "increment"]) } catch { preconditionFailure("\(error)") }
                }
            ))
        token.cancel()
        counter.dispose()
    }

    for lines in [5, 50, 500] where wanted("cart, \(lines) lines") {
        let cart = try host.load(name: "cart\(lines)", source: cartSource(lines: lines))
        cart.start()
        let model = try cart.model(as: CartView.self, actions: LuaValue.self)
        rows.append(
            (
                "cart, \(lines) lines",
                timed(sends) { k in
                    // Every send gives one line a quantity it did not have.
                    let line = k % lines, qty = 2 + k
                    model.send(["type": "setQty", "line": LuaValue(line + 1), "qty": LuaValue(qty)])
                    precondition(model.view.items[line].qty == qty, "the view did not change")
                }
            ))
        model.stop()
        cart.dispose()
    }

    // The floor: the same sends with an empty state listener and no view model.
    if wanted("cart, 500 lines, no view model") {
        let cart = try host.load(name: "barecart", source: cartSource(lines: 500))
        let token = cart.observe(kinds: .state) { _ in }
        cart.start()
        rows.append(
            (
                "cart, 500 lines, no view model",
                timed(sends) { k in
                    let line = k % 500
                    do { try cart.send(["type": "setQty", "line": LuaValue(line + 1), "qty": LuaValue(2 + k)]) } catch {
                        preconditionFailure("\(error)")
                    }
                }
            ))
        token.cancel()
        cart.dispose()
    }

    guard wanted("cart, 500 lines, not a PatchableView") else { return rows }
    let cart = try host.load(name: "plaincart", source: cartSource(lines: 500))
    cart.start()
    let plain = try cart.model(as: PlainCartView.self, actions: LuaValue.self)
    rows.append(
        (
            "cart, 500 lines, not a PatchableView",
            timed(max(1, sends / 10)) { k in
                let line = k % 500, qty = 2 + k
                plain.send(["type": "setQty", "line": LuaValue(line + 1), "qty": LuaValue(qty)])
                precondition(plain.view.items[line].qty == qty, "the view did not change")
            }
        ))
    plain.stop()
    cart.dispose()
    return rows
}
