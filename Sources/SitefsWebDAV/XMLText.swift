/// Text as XML character data, for the request bodies sitefs writes (LOCK's owner,
/// PROPPATCH's values): `&`, `<`, `>` and `"` escaped, everything else as it is.
public enum XMLText {
    public static func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            default: result.append(character)
            }
        }
        return result
    }
}
