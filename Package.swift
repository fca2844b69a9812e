// swift-tools-version:6.0
// The sitefs package: the `sitefs` mount daemon and `sitefs-server`, the reference
// document server it is developed and tested against.
import PackageDescription

let package = Package(
    name: "sitefs",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "sitefs", targets: ["SitefsClientCLI"]),
        .executable(name: "sitefs-server", targets: ["SitefsServerCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        // 1.16: `LogHandler.log(event:)`, which `EscapingLogHandler` implements.
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.4.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.5.0"),
        // Already under Hummingbird; named for the server's HTTP parser errors (malformed bodies are 400s).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.70.0"),
        // Already under Hummingbird: the request parts a server channel handler sees.
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.20.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.27.0"),
        // Hashes, HMAC, PBKDF2 and randomness: never hand-written crypto.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.0.0"..<"5.0.0"),
        // The server's PostgreSQL store (`--database`): the Swift server ecosystem's client,
        // on the NIO stack the server already runs (its TLS too).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        // The server's thumbnails of office documents: the picture an ODF or OOXML file keeps
        // in its zip.
        .package(url: "https://github.com/weichsel/ZIPFoundation.git", from: "0.9.20"),
    ],
    targets: [
        // Wire vocabulary shared by server and client: item JSON, names, timestamps.
        .target(name: "SitefsAPI"),
        // SHA-256, HMAC, PBKDF2 and secure random tokens from swift-crypto, password hashes
        // and the encodings they are stored in.
        .target(
            name: "SitefsCrypto",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Sample office documents (.odt, .docx, .xlsx) for the demo sites.
        .target(name: "SitefsDemoContent", dependencies: ["SitefsCrypto"]),
        // libcurl, with typed wrappers for the variadic calls Swift cannot make.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Linux calls Swift's Glibc module leaves out (extended attributes, copy_file_range,
        // renameat2), declared for the compiler to check.
        .systemLibrary(name: "CLinux"),
        // libxml2's push (SAX2) parser, for WebDAV multistatus bodies as they arrive and the
        // server's document text for search (ODF and OOXML parts streamed out of their zips).
        .systemLibrary(name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        // libvips, with typed wrappers for its variadic calls: the server's thumbnails (images,
        // PDFs, office documents' own pictures). Linked by the server only, never the client.
        .systemLibrary(name: "CVips", pkgConfig: "vips", providers: [.apt(["libvips-dev"])]),
        // WebDAV (RFC 4918) as sitefs reads it: multistatus parsing, hrefs (SitefsWebDAVBackend
        // is the backend built on it).
        .target(name: "SitefsWebDAV", dependencies: ["CLibXML2"], exclude: ["README.md"]),
        // A WebDAV server as a DocumentBackend, over the HTTP client: stable identities for
        // path-named items (GRDB), listings streamed into pages, conditional PUT, MOVE.
        .target(
            name: "SitefsWebDAVBackend",
            dependencies: [
                "SitefsWebDAV", "SitefsHTTP", "SitefsProvider", "SitefsAPI", "SitefsCrypto",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite itself, as GRDB links it: a first listing's inserts bind values
                // directly (NewChildInsert).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["README.md"]
        ),
        // Blocking HTTP/1.1 client over libcurl, for the mount daemon's FUSE worker threads.
        .target(name: "SitefsHTTP", dependencies: ["CCurl"]),
        // API v1 as a DocumentBackend (the client side of SitefsServerCore).
        .target(name: "SitefsHTTPBackend", dependencies: ["SitefsHTTP", "SitefsProvider", "SitefsAPI", "SitefsCrypto"]),
        // The File Provider vocabulary: identifiers, items, pages, the backend protocol.
        .target(name: "SitefsProvider", dependencies: ["SitefsAPI"]),
        // The concurrency toolbox the store, the engine and the core share: the lock order
        // (ranked mutexes and conditions, checked at run time), the mount's clock (injectable
        // for tests of races), the background unlinker.
        .target(name: "SitefsConcurrency"),
        // Local store: metadata cache, content copies and staging.
        .target(
            name: "SitefsStore",
            dependencies: [
                "SitefsProvider", "SitefsAPI", "SitefsConcurrency", "CLinux",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite itself, as GRDB links it: the metadata cache's bulk inserts bind
                // values directly (BulkInsert).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The sync engine: what the mount shows that the server does not have yet, and how it
        // gets there (the durable journal, uploads, deferred renames, conflicts, an editor's
        // save folded into one version). `SyncEngine` is its whole interface toward the core.
        .target(
            name: "SitefsSync",
            dependencies: [
                "SitefsProvider", "SitefsAPI", "SitefsStore", "SitefsConcurrency",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The filesystem core: inodes, directory and file handles, over the provider model.
        // No C types: testable without a kernel.
        .target(
            name: "SitefsCore",
            dependencies: [
                "SitefsProvider", "SitefsStore", "SitefsSync", "SitefsAPI", "SitefsCrypto", "SitefsConcurrency",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // libfuse3's low-level API: FUSE_USE_VERSION and typed wrappers for its macros.
        .systemLibrary(name: "CFuse", pkgConfig: "fuse3", providers: [.apt(["libfuse3-dev"])]),
        // The FUSE adapter: the only code that touches libfuse.
        .target(
            name: "SitefsFUSE",
            dependencies: ["CFuse", "SitefsCore", .product(name: "SystemPackage", package: "swift-system")]
        ),
        // The `sitefs` executable: login, logout, mount (the daemon), unmount, status, sync,
        // retry, pin, unpin, evict, search, versions, restore, info.
        .executableTarget(
            name: "SitefsClientCLI",
            dependencies: [
                "SitefsFUSE", "SitefsCore", "SitefsHTTPBackend", "SitefsHTTP", "SitefsProvider", "SitefsAPI", "SitefsCrypto",
                "SitefsCommandLine", "CLinux", "SitefsSync", "SitefsWebDAVBackend", "SitefsMountControl",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What `sitefs search`, `versions`, `restore` and `info` compute themselves around the
        // daemon's control attributes: search folder names, short version ids, the output.
        .target(name: "SitefsMountControl", dependencies: ["SitefsCrypto", "SitefsCommandLine"]),
        // Shared by both executables: terminal password input, log and terminal escaping.
        .target(
            name: "SitefsCommandLine",
            dependencies: [
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The reference document server: storage (SQLite or PostgreSQL), auth, HTTP routes.
        .target(
            name: "SitefsServerCore",
            dependencies: [
                "SitefsAPI", "SitefsCrypto", "SitefsDemoContent", "CVips", "CLibXML2",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                // Already under HummingbirdTLS: loading the certificate and key.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            exclude: ["openapi.yaml"]
        ),
        .executableTarget(
            name: "SitefsServerCLI",
            dependencies: [
                "SitefsServerCore", "SitefsCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // libFuzzer entry point over the parsers of untrusted bytes; built only by
        // scripts/fuzz, with -sanitize=fuzzer (see Sources/SitefsFuzz/main.swift).
        .executableTarget(
            name: "SitefsFuzz",
            dependencies: ["SitefsAPI", "SitefsHTTP", "SitefsHTTPBackend", "SitefsWebDAV"]
        ),
        // The test kit: the real executables as child processes, curl as a client, the
        // fault proxy, the in-memory backend with its failure injection, one bounded wait.
        .target(name: "SitefsTestSupport", dependencies: ["SitefsProvider", "SitefsAPI", .product(name: "Logging", package: "swift-log")],
                path: "Tests/SitefsTestSupport"),
        .testTarget(name: "SitefsAPITests", dependencies: ["SitefsAPI"]),
        .testTarget(name: "SitefsCryptoTests", dependencies: ["SitefsCrypto"]),
        .testTarget(
            name: "SitefsCommandLineTests",
            dependencies: ["SitefsCommandLine", "SitefsTestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "SitefsHTTPTests", dependencies: ["SitefsHTTP", "SitefsTestSupport"]),
        .testTarget(name: "SitefsMountControlTests", dependencies: ["SitefsMountControl", "SitefsCrypto"]),
        .testTarget(name: "SitefsFaultProxyTests", dependencies: ["SitefsTestSupport"]),
        .testTarget(
            name: "SitefsFUSETests",
            dependencies: ["SitefsFUSE", "SitefsCore", "SitefsTestSupport", "CLinux", .product(name: "SystemPackage", package: "swift-system")]
        ),
        .testTarget(
            name: "SitefsHTTPBackendTests",
            dependencies: [
                "SitefsHTTPBackend", "SitefsProvider", "SitefsAPI", "SitefsTestSupport", "SitefsServerCLI",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
        .testTarget(
            name: "SitefsMountTests",
            dependencies: ["SitefsTestSupport", "SitefsAPI", "SitefsClientCLI", "SitefsServerCLI", "SitefsDemoContent"],
            // Programs the tests run beside sitefs (a desktop-notification listener) and projects
            // they build on a mount (Fixtures), found by path.
            exclude: ["Support", "Fixtures"]
        ),
        .testTarget(
            name: "SitefsCoreTests",
            dependencies: [
                "SitefsCore", "SitefsProvider", "SitefsStore", "SitefsSync", "SitefsAPI", "SitefsTestSupport",
                "SitefsConcurrency",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SitefsSyncTests",
            dependencies: [
                "SitefsSync", "SitefsStore", "SitefsProvider", "SitefsAPI", "SitefsTestSupport",
                "SitefsConcurrency",
                .product(name: "Logging", package: "swift-log"),
                // A journal of an earlier version is made with SQLite itself.
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "SitefsStoreTests",
            dependencies: ["SitefsStore", "SitefsProvider", "SitefsAPI", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "SitefsConcurrencyTests", dependencies: ["SitefsConcurrency"]),
        .testTarget(name: "SitefsWebDAVTests", dependencies: ["SitefsWebDAV"]),
        .testTarget(
            name: "SitefsWebDAVBackendTests",
            dependencies: [
                "SitefsWebDAVBackend", "SitefsWebDAV", "SitefsHTTP", "SitefsProvider", "SitefsAPI", "SitefsTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "SitefsDemoContentTests", dependencies: ["SitefsDemoContent", "SitefsCrypto"]),
        .testTarget(
            name: "SitefsServerTests",
            dependencies: [
                "SitefsServerCore", "SitefsAPI", "SitefsServerCLI", "SitefsTestSupport", "SitefsCrypto",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                // Building a database at an old schema version, to migrate it.
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
    ]
)
