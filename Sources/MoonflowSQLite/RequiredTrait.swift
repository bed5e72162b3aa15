// MoonflowSQLite builds only with Moonflow's `SQLite` trait on, which brings GRDB. An app that
// links it names the trait in its dependency (docs/embedding.md); without it, this says so
// before "no such module 'GRDB'" does.
#if !SQLite
#error("MoonflowSQLite needs Moonflow's SQLite trait: .package(..., traits: [\"SQLite\"]) (docs/embedding.md)")
#endif
