/// `retry`: on failure, subscribe to the source again, up to `retries` more times; the failure
/// of the last attempt passes through (RxSwift semantics, counted in retries, not attempts).
/// Values already sent stay sent; completion and interruption pass through.
///
/// Each attempt runs as its own subscription. With a backoff, the next attempt waits on the
/// scheduler for as many milliseconds as the backoff gives for the retry's number (1, 2, ...).
/// Attempts are started by a loop, not by recursion, so a source that fails as soon as it is
/// started can be retried any number of times without deepening the stack.
enum Retry {
    private struct State {
        var retries = 0
        var isLooping = false
        var isRequested = false
    }

    static func run<Value: Sendable>(
        _ source: Producer<Value>, _ retries: Int, _ backoff: (@Sendable (Int) throws -> Int)?, _ scheduler: Scheduler?,
        _ observer: Observer<Value>, _ lifetime: Lifetime
    ) {
        let downstream = Serializer(observer)
        let state = Locked(State())
        let attempt = SerialDisposable()
        let wait = SerialDisposable()
        lifetime += attempt
        lifetime += wait

        // Asks for one more attempt; the caller that finds no loop running runs it.
        @Sendable func resubscribe() {
            let runsLoop = state.withLock { state in
                state.isRequested = true
                if state.isLooping { return false }
                state.isLooping = true
                return true
            }
            guard runsLoop else { return }
            while true {
                let goes = state.withLock { state in
                    if state.isRequested && !lifetime.hasEnded {
                        state.isRequested = false
                        return true
                    }
                    state.isLooping = false
                    return false
                }
                guard goes else { return }
                attempt.inner = source.start(
                    Observer { event in
                        guard case .failed(let error) = event else { return downstream.send(event) }
                        let retry: Int? = state.withLock { state in
                            guard state.retries < retries else { return nil }
                            state.retries += 1
                            return state.retries
                        }
                        guard let retry else { return downstream.sendFailed(error) }
                        guard let backoff, let scheduler else { return resubscribe() }
                        let delayMs: Int
                        do { delayMs = try backoff(retry) } catch { return downstream.sendFailed(error) }
                        wait.inner = scheduler.schedule(after: delayMs) { resubscribe() }
                    })
            }
        }

        resubscribe()
    }
}

extension Producer {
    /// Subscribes to this producer again when it fails, up to `retries` more times; if the
    /// last attempt fails too, its failure passes through.
    ///
    /// ```swift
    /// pay(order).retry(1)   // two attempts in all
    /// ```
    ///
    /// - Parameter retries: How many times to try again; zero or less: never.
    /// - Returns: The retrying producer; values of failed attempts stay sent.
    public func retry(_ retries: Int) -> Producer<Value> {
        Producer { observer, lifetime in Retry.run(self, retries, nil, nil, observer, lifetime) }
    }

    /// Subscribes to this producer again when it fails, up to `retries` more times, each time
    /// after waiting `backoff(retry)` milliseconds, where `retry` counts 1, 2, ...; if the
    /// last attempt fails too, its failure passes through.
    ///
    /// ```swift
    /// pay(order).retry(3, backoff: { 100 * $0 }, on: scheduler)   // waits 100, 200, 300 ms
    /// ```
    ///
    /// - Parameters:
    ///   - retries: How many times to try again; zero or less: never.
    ///   - backoff: The wait before retry number `retry`; if it throws, the result fails with
    ///     that error.
    ///   - scheduler: Measures the waits and starts the attempts after them.
    /// - Returns: The retrying producer; values of failed attempts stay sent.
    public func retry(
        _ retries: Int, backoff: @escaping @Sendable (_ retry: Int) throws -> Int, on scheduler: Scheduler
    ) -> Producer<Value> {
        Producer { observer, lifetime in Retry.run(self, retries, backoff, scheduler, observer, lifetime) }
    }
}
