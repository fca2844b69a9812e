/// Demo site "Harbour Tower": a 16-storey residential tower in concrete frame on the
/// waterfront, mid-way through the frame, so the files are the ones a busy tower crane
/// site produces (slab pours, formwork checks, crane lifts, daily deliveries).
enum HarbourTowerSite {
    static let name = "Harbour Tower"

    static func files() -> [DemoFile] {
        [
            DemoFile(path: ["README.txt"], text: readme),
            DemoFile(path: ["Forms", "Inspections", "Formwork inspection - level 7.odt"],
                     contents: OfficeDocuments.odt(title: "Formwork inspection - level 7 slab",
                                                   blocks: formworkInspection)),
            DemoFile(path: ["Safety", "Construction phase safety plan.docx"],
                     contents: OfficeDocuments.docx(title: "Harbour Tower - construction phase safety plan",
                                                    blocks: safetyPlan)),
            DemoFile(path: ["Plans", "Lifting", "Tower crane lifting plan - level 7.xlsx"],
                     contents: OfficeDocuments.xlsx(sheetName: "Lifts level 7", rows: liftingPlan)),
            DemoFile(path: ["Deliveries", "Deliveries 2024-05.csv"], text: CSVText.render(deliveries)),
        ]
    }

    static let readme = """
        HARBOUR TOWER - SITE DOCUMENTS
        ==============================

        16-storey residential tower, 112 apartments, reinforced concrete frame.
        Main contractor: Northquay Build Ltd. Site office: cabin 2, Quay Road gate.

        This folder is the shared document site for the project. Everything here is
        visible to the site team, the frame subcontractor and the client's inspector.

        Forms/Inspections/  Completed inspection forms (formwork, rebar, pre-pour).
                            Copy a form, fill it in and save it with the level in the
                            file name. Do not overwrite another person's form.
        Safety/             Construction phase safety plan and its revisions.
                            Everyone on site must have read the current revision.
        Plans/Lifting/      Lifting plans for the tower crane (TC1, 60 m jib).
                            A lift that is not on a plan does not happen.
        Deliveries/         Delivery log, one CSV file per month. The gate marshal
                            fills it in; quantities are checked against delivery notes.

        Questions about this folder: site manager, ext. 201.

        """

    static let formworkInspection: [OfficeDocuments.Block] = [
        "Project: Harbour Tower, Quay Road\nLocation: Level 7 slab, grid lines A-F / 1-9",
        "Inspected by: J. Okafor (temporary works coordinator)\nDate: 6 May 2024, 07:30",
        "Purpose: permit to load the level 7 slab formwork with reinforcement and concrete.",
        .heading("Checklist"),
        .table([
            ["Item", "Check", "Result", "Remarks"],
            ["1", "Props plumb, at design spacing (1.2 m), base plates on sole boards", "OK", ""],
            ["2", "Primary and secondary beams seated in forkheads", "OK", ""],
            ["3", "Deck panels level, joints closed, release agent applied", "OK", "Grid C/4 re-shimmed"],
            ["4", "Edge protection fitted on all open edges", "Not OK", "Gap at stair core, see finding 1"],
            ["5", "Back-propping to levels 5 and 6 in place", "OK", "Per drawing TW-07-03 rev B"],
            ["6", "Penetrations and box-outs fixed & marked", "OK", "Riser boxes at D/7 and E/7"],
            ["7", "Access to deck: ladder tower tied, gate self-closing", "OK", ""],
        ]),
        .heading("Findings"),
        "1. Edge protection missing for 2.4 m at the stair core (grid B/8). Fit before any loading; photo on file.",
        "2. Two props at grid F/2 rest on a cracked sole board. Replace the board and re-check.",
        .heading("Decision"),
        "Formwork NOT released for loading until findings 1 and 2 are closed. Re-inspection requested for 6 May 2024, 11:00.",
        "Signed: J. Okafor    Countersigned: M. Lindqvist (site manager)",
    ]

    static let safetyPlan: [OfficeDocuments.Block] = [
        "Revision C, 29 April 2024. Supersedes revision B. Owner: site manager, Northquay Build Ltd.",
        .heading("1. Project and responsibilities"),
        "Construction of a 16-storey residential tower with a two-level basement car park. The frame is in progress (levels 6 to 8) while basement fit-out continues below.",
        "The site manager is responsible for this plan. Every subcontractor supervisor briefs their own team on it and keeps a signed record of the briefing.",
        .heading("2. Site access and induction"),
        "The only entrance is the Quay Road gate. Everyone signs in at the gate and must have completed the site induction. Visitors are escorted at all times.",
        "Minimum PPE: helmet, safety boots, high-visibility vest, gloves and eye protection. Lifejackets are required within 2 m of the quay edge.",
        .heading("3. Work at height"),
        "Edge protection is installed before a slab is loaded and is only removed under permit. Working from ladders is limited to short-duration tasks with three points of contact.",
        "Exclusion zones below slab edges are kept clear while the climbing screens are moved.",
        .heading("4. Lifting operations"),
        "All lifts with tower crane TC1 follow a lifting plan approved by the appointed person. Lifting stops when wind speed at the jib exceeds 38 km/h (gusts) or visibility prevents the signaller seeing the load.",
        .heading("5. Emergency arrangements"),
        "Assembly point: car park opposite the Quay Road gate. Fire alarm: continuous air horn. First aiders wear green helmets; the first-aid room is in cabin 3.",
        .table([
            ["Role", "Name", "Phone"],
            ["Site manager", "Maria Lindqvist", "+44 1632 960 201"],
            ["Temporary works coordinator", "James Okafor", "+44 1632 960 214"],
            ["Crane appointed person", "Ravi Patel", "+44 1632 960 233"],
            ["Emergency services", "", "999"],
        ]),
    ]

    /// Weights and capacities in tonnes, radius in metres; utilisation is computed here
    /// so the numbers in the demo are consistent with each other.
    static let liftingPlan: [[OfficeDocuments.Cell]] = {
        let lifts: [(String, String, Double, Double, Double, String, String)] = [
            ("L7-01", "Rebar bundle, 12 m, B16", 1.8, 24, 6.2, "2-leg chain sling 3.15 t", "07:30"),
            ("L7-02", "Rebar bundle, 12 m, B25", 2.4, 31, 4.9, "2-leg chain sling 3.15 t", "08:15"),
            ("L7-03", "Concrete skip 1.0 m³ (full)", 2.6, 28, 5.4, "Skip bridle, certified", "10:00"),
            ("L7-04", "Table form, bay D-E", 1.2, 45, 3.1, "4-leg sling + spreader", "13:00"),
            ("L7-05", "Stair core pre-cast flight", 3.2, 18, 8.0, "4-leg chain sling 5.3 t", "14:30"),
            ("L7-06", "Edge protection stillage", 0.6, 52, 2.6, "Stillage lifting eyes", "15:45"),
        ]
        var rows: [[OfficeDocuments.Cell]] = [[
            "Lift", "Load", "Weight (t)", "Radius (m)", "Capacity at radius (t)", "Utilisation (%)",
            "Lifting accessories", "Planned time",
        ]]
        for (id, load, weight, radius, capacity, accessories, time) in lifts {
            let utilisation = (weight / capacity * 1000).rounded() / 10
            rows.append([.text(id), .text(load), .number(weight), .number(radius), .number(capacity),
                         .number(utilisation), .text(accessories), .text(time)])
        }
        rows.append([])
        rows.append(["Crane: TC1, 60 m jib, hook height 58 m. Appointed person: R. Patel. Stop lifting above 38 km/h wind."])
        return rows
    }()

    static let deliveries: [[String]] = [
        ["Date", "Time", "Supplier", "Material", "Quantity", "Unit", "Vehicle", "Delivery note", "Received by", "Notes"],
        ["2024-05-02", "06:55", "Quayside Ready-Mix", "Concrete C32/40", "36", "m3", "KX21 BFO", "RM-55812", "D. Hughes", "Level 6 slab pour, 6 trucks"],
        ["2024-05-02", "09:40", "Steelfix North", "Rebar B16/B25, cut & bent", "14.2", "t", "YR19 TLM", "SN-30477", "D. Hughes", ""],
        ["2024-05-03", "07:10", "FormTech Hire", "Props, 3.0-4.5 m", "240", "pcs", "PL68 ZWK", "FT-11920", "A. Nowak", "12 props damaged, returned"],
        ["2024-05-03", "13:25", "Harbour Builders Merchant", "Sole boards 225x38", "80", "pcs", "GN70 PSA", "HB-7781", "A. Nowak", ""],
        ["2024-05-06", "06:50", "Steelfix North", "Rebar B12 mesh, A393", "96", "sheets", "YR19 TLM", "SN-30502", "D. Hughes", "Lifted straight to level 7, plan L7-01"],
        ["2024-05-06", "11:05", "SafeEdge Systems", "Edge protection panels", "40", "pcs", "WD22 KRE", "SE-2291", "A. Nowak", "For stair core gap, \"urgent\" per TWC"],
    ]
}
