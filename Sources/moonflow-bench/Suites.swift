/// Every benchmark suite, in the order they print. Each suite lives in its own file.
func benchSuites() -> [(name: String, run: () -> Void)] {
    [
        ("interactor", interactorBench),
        ("lua", luaBench),
        ("feature", featureBench),
        ("publish", publishBench),
        ("startup", startupBench),
        ("reload", reloadBench),
        ("growth", growthBench),
        ("print", printBench),
        ("scale", scaleBench),
        ("cycles", cycleBench),
        ("repository", repositoryBench),
        ("viewmodel", viewModelBench),
        ("inspector", inspectorBench),
        ("serve", serveBench),
        ("debug", debugBench),
        ("explore", exploreBench),
    ]
}
