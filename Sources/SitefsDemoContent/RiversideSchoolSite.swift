/// Demo site "Riverside School": a two-storey timber-frame (CLT) extension to a primary
/// school that stays open during the works, built by a Finnish-British joint team.
/// It carries the demo's non-ASCII content: Finnish words ("työmaa", construction
/// site) in the text and in one file name, to exercise UTF-8 end to end.
enum RiversideSchoolSite {
    static let name = "Riverside School"

    static func files() -> [DemoFile] {
        [
            DemoFile(path: ["README.txt"], text: readme),
            DemoFile(path: ["Forms", "Inspections", "Scaffold inspection - east wing.odt"],
                     contents: OfficeDocuments.odt(title: "Scaffold inspection - east wing",
                                                   blocks: scaffoldInspection)),
            DemoFile(path: ["Safety", "Site safety plan.docx"],
                     contents: OfficeDocuments.docx(title: "Riverside School extension - site safety plan",
                                                    blocks: safetyPlan)),
            DemoFile(path: ["Plans", "Materials", "Material list - CLT frame.xlsx"],
                     contents: OfficeDocuments.xlsx(sheetName: "CLT frame", rows: materialList)),
            DemoFile(path: ["Deliveries", "Työmaa deliveries 2024-09.csv"], text: CSVText.render(deliveries)),
        ]
    }

    static let readme = """
        RIVERSIDE SCHOOL EXTENSION - SITE DOCUMENTS
        ===========================================

        Two-storey extension (6 classrooms, dining hall) in cross-laminated timber,
        built next to a school that stays open. Työmaa = construction site in Finnish;
        the frame crew uses both languages, so some file names are in Finnish.

        Forms/Inspections/  Weekly scaffold and excavation inspections. One file per
                            inspection; the date is inside the form.
        Safety/             Site safety plan. Read section 2 before your first shift:
                            the school day sets our working hours and routes.
        Plans/Materials/    Material lists and take-offs for the CLT frame and roof.
        Deliveries/         Delivery log (CSV, one file per month). Deliveries are only
                            accepted 09:15-14:30, outside school arrival and pick-up.

        Keep personal data about pupils and staff out of this folder.

        """

    static let scaffoldInspection: [OfficeDocuments.Block] = [
        "Project: Riverside School extension\nScaffold: east wing, independent tied scaffold, lifts 1-4",
        "Inspected by: Aino Virtanen (CISRS scaffold inspector)\nDate: 9 September 2024, 08:00",
        "Reason for inspection: weekly inspection, and after strong winds on 7-8 September.",
        .heading("Checklist"),
        .table([
            ["Item", "Check", "Result", "Remarks"],
            ["1", "Base plates and sole boards sound, ground not undermined", "OK", "Drain trench kept 1 m clear"],
            ["2", "Standards plumb, ledgers & transoms complete", "OK", ""],
            ["3", "Ties at design pattern (4 m x 4 m), none removed", "Not OK", "Tie missing at lift 3, bay 5"],
            ["4", "Boards complete, no trip hazards, toe boards fitted", "OK", ""],
            ["5", "Guardrails at 950 mm, intermediate rails fitted", "OK", ""],
            ["6", "Brick guards / netting on playground side", "OK", "Netting re-tensioned after wind"],
            ["7", "Access ladder tied, ladder gate closes", "OK", ""],
            ["8", "Scaffold tag updated", "OK", "Red tag until item 3 fixed"],
        ]),
        .heading("Findings"),
        "Tie at lift 3, bay 5 removed for window installation without a permit. Scaffold bays 4-6 closed from lift 3 up until the tie is replaced.",
        .heading("Result"),
        "Scaffold safe to use except bays 4-6 above lift 2. Re-inspect after the tie is refitted. Työmaa notice board updated.",
        "Signed: A. Virtanen",
    ]

    static let safetyPlan: [OfficeDocuments.Block] = [
        "Version 2, 2 September 2024. Prepared by the principal contractor for the työmaa at Riverside School.",
        .heading("1. Scope"),
        "This plan covers the erection of the CLT frame, roof and envelope of the new east wing, and the temporary works needed for them, while the existing school remains in use.",
        .heading("2. Working next to an open school"),
        "The site is separated from the school by a 2.4 m solid hoarding. Pupils and staff never cross the site boundary; contractors never enter the school without the caretaker.",
        "No vehicle movements and no crane lifts over the boundary between 08:15-09:15 and 14:30-15:30 (arrival and pick-up). Deliveries are booked for 09:15-14:30 only.",
        "Site staff with access to the school hold a valid background check (DBS). Photographs that may show pupils are not taken.",
        .heading("3. Frame erection"),
        "CLT panels are lifted by a 60 t mobile crane from the hard standing on the river side. Panels are landed on timber bearers and propped before the crane releases them.",
        "Timber is a fire load: hot works need a permit, a fire watch of 60 minutes after work and an extinguisher at the point of work.",
        .heading("4. River and flood risk"),
        "The works area is within 30 m of the river bank. Check the flood warning before the shift; if a warning is issued, the excavation is closed and plant is moved to the upper compound.",
        .heading("5. Contacts"),
        .table([
            ["Role", "Name", "Phone"],
            ["Työmaapäällikkö (site manager)", "Mikko Heikkinen", "+358 50 000 1201"],
            ["Frame supervisor", "Sarah O'Connell", "+44 1632 960 877"],
            ["School caretaker", "Tom Baker", "+44 1632 960 410"],
            ["Emergency", "", "112 / 999"],
        ]),
    ]

    static let materialList: [[OfficeDocuments.Cell]] = {
        let items: [(String, String, String, Double, Double, String, String)] = [
            ("W-01", "CLT wall panel, 120 mm, C24, visible grade one side", "m²", 412, 57.6, "Nordic Timber Oy", "W37"),
            ("W-02", "CLT wall panel, 100 mm, non-visible", "m²", 268, 48.0, "Nordic Timber Oy", "W37"),
            ("F-01", "CLT floor panel, 200 mm, 5-layer", "m²", 540, 96.0, "Nordic Timber Oy", "W38"),
            ("R-01", "Glulam roof beam GL30c, 140 x 630 mm", "m", 186, 29.5, "Nordic Timber Oy", "W39"),
            ("C-01", "Angle bracket 90 x 116 mm, galvanised", "pcs", 1240, 0.42, "FixPro Ltd", "W36"),
            ("C-02", "Self-tapping screw 8 x 240 mm", "pcs", 9600, 0.09, "FixPro Ltd", "W36"),
            ("M-01", "Vapour control membrane, 1.5 m roll", "m²", 1150, 0.2, "Envelope Supplies", "W39"),
        ]
        var rows: [[OfficeDocuments.Cell]] = [[
            "Item", "Description", "Unit", "Quantity", "Unit weight (kg)", "Total weight (kg)", "Supplier",
            "Delivery week",
        ]]
        var totalWeight = 0.0
        for (id, description, unit, quantity, unitWeight, supplier, week) in items {
            let weight = (quantity * unitWeight).rounded()
            totalWeight += weight
            rows.append([.text(id), .text(description), .text(unit), .number(quantity), .number(unitWeight),
                         .number(weight), .text(supplier), .text(week)])
        }
        rows.append(["", "Total", "", "", "", .number(totalWeight), "", ""])
        return rows
    }()

    static let deliveries: [[String]] = [
        ["Date", "Time", "Supplier", "Material", "Quantity", "Unit", "Vehicle", "Delivery note", "Received by", "Notes"],
        ["2024-09-02", "09:20", "FixPro Ltd", "Angle brackets, screws", "2", "pallets", "LK72 FXP", "FP-4410", "S. O'Connell", ""],
        ["2024-09-04", "10:05", "Riverside Aggregates", "Type 1 sub-base", "38", "t", "RA18 TIP", "RA-99120", "M. Heikkinen", "Crane hard standing, 2 loads"],
        ["2024-09-09", "09:30", "Nordic Timber Oy", "CLT wall panels W-01, 1st load", "14", "panels", "ABC-123 (FI)", "NT-2024-0871", "M. Heikkinen", "Työmaa gate B; panel 7 edge damaged, photographed"],
        ["2024-09-10", "09:45", "Nordic Timber Oy", "CLT wall panels W-01, 2nd load", "16", "panels", "ABC-123 (FI)", "NT-2024-0872", "M. Heikkinen", ""],
        ["2024-09-11", "13:50", "Envelope Supplies", "Vapour control membrane", "24", "rolls", "EN23 VCL", "ES-1183", "S. O'Connell", "Stored in container 2, \"keep dry\""],
    ]
}
