/// The inspector's page: one self-contained HTML file (no network besides its
/// own WebSocket), kept in the binary so `moonflow` needs nothing beside it.
/// Its source is `Page/inspector.html` and `Page/inspector.js`, compiled in as
/// resources; the script is inlined where the page loads it.
///
/// It keeps every frame, applies each state patch with structural sharing (a
/// step's state shares what did not change with the one before, so 10,000
/// steps of a 1,000-row state stay small), and draws only the timeline rows in
/// view. `InspectorPage.script` is the JavaScript alone (tests run `node --check` on it).
public enum InspectorPage {
    public static let html: String = {
        let page = String(decoding: PackageResources.inspector_html, as: UTF8.self)
        let tag = "<script src=\"inspector.js\"></script>"
        precondition(page.contains(tag), "Page/inspector.html loads inspector.js with \(tag)")
        return page.replacingOccurrences(of: tag, with: "<script>\n" + script + "\n</script>")
    }()

    public static let script = String(decoding: PackageResources.inspector_js, as: UTF8.self)
}
