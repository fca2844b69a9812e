/// Sample content for the reference server's `--demo` mode: two construction-site
/// document sites, each with nested folders and the kinds of files a site office
/// really keeps (inspection form, safety plan, lifting plan or material list,
/// deliveries log, README), so the sitefs client can be tried against LibreOffice.
public enum DemoContent {
    /// The demo sites, in the order the server should create them.
    public static let siteNames: [String] = [HarbourTowerSite.name, RiversideSchoolSite.name]

    /// The files of the site called `name`, in a stable order; empty for a name that is
    /// not in `siteNames`, so callers can treat "no such demo site" as "nothing to seed".
    public static func site(named name: String) -> [DemoFile] {
        switch name {
        case HarbourTowerSite.name: return HarbourTowerSite.files()
        case RiversideSchoolSite.name: return RiversideSchoolSite.files()
        default: return []
        }
    }
}
