import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A tiny element tree built with Foundation's XMLParser, with namespaces processed.
///
/// Parsing fails if the parser reports any error at all: on Linux `parse()` can return
/// true for mismatched tags, so the error callback is the reliable signal.
final class XMLTestNode {
    let qualifiedName: String
    let localName: String
    let namespaceURI: String
    let attributes: [String: String]
    var children: [XMLTestNode] = []
    /// Text directly inside this element.
    var text = ""
    /// All text below this element, in document order.
    var allText = ""

    init(qualifiedName: String, localName: String, namespaceURI: String, attributes: [String: String]) {
        self.qualifiedName = qualifiedName
        self.localName = localName
        self.namespaceURI = namespaceURI
        self.attributes = attributes
    }

    /// Every element at or below this one, depth first.
    var descendants: [XMLTestNode] { [self] + children.flatMap(\.descendants) }

    func child(_ qualifiedName: String) -> XMLTestNode? {
        children.first { $0.qualifiedName == qualifiedName }
    }

    /// Follows a path of qualified child names, e.g. ["office:body", "office:text"].
    func path(_ names: [String]) -> XMLTestNode? {
        names.reduce(self as XMLTestNode?) { $0?.child($1) }
    }

    struct ParseFailure: Error, CustomStringConvertible {
        let description: String
    }

    static func parse(_ bytes: [UInt8]) throws -> XMLTestNode {
        let builder = Builder()
        let parser = XMLParser(data: Data(bytes))
        parser.shouldProcessNamespaces = true
        parser.delegate = builder
        let finished = parser.parse()
        if !finished || !builder.errors.isEmpty {
            throw ParseFailure(description: "XML not well-formed: \(builder.errors), line \(parser.lineNumber)")
        }
        guard let root = builder.root, builder.stack.isEmpty else {
            throw ParseFailure(description: "no complete root element")
        }
        return root
    }

    private final class Builder: NSObject, XMLParserDelegate {
        var root: XMLTestNode?
        var stack: [XMLTestNode] = []
        var errors: [String] = []

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
            let node = XMLTestNode(qualifiedName: qName ?? elementName, localName: elementName,
                                   namespaceURI: namespaceURI ?? "", attributes: attributeDict)
            if let parent = stack.last { parent.children.append(node) } else if root == nil { root = node }
            stack.append(node)
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?,
                    qualifiedName qName: String?) {
            stack.removeLast()
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            stack.last?.text += string
            for node in stack { node.allText += string }
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
            errors.append("\(parseError)")
        }
    }
}
