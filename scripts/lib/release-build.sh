#!/usr/bin/env bash
# Builds the release binaries of sitefs and sitefs-server once and stages everything an
# installation needs, for scripts/install and scripts/package to share (CI builds once):
#   .build-release/stage/bin/{sitefs,sitefs-server}     static Swift runtime: no /opt/swift at run time
#   .build-release/stage/share/man/man1/*.1             from the argument parser (its generate-manual)
#   .build-release/stage/share/{bash-completion,zsh,fish}/...   from --generate-completion-script
# Run it, or source it: either way it leaves SITEFS_STAGE set to the stage folder (the
# sourced form keeps the caller's folder and shell options; a failed build returns 1).
# SwiftPM skips what is up to date, so a second run takes seconds.
SITEFS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SITEFS_SCRATCH="$SITEFS_ROOT/.build-release"
SITEFS_STAGE="$SITEFS_SCRATCH/stage"
export SITEFS_STAGE

sitefs_release_build() {
    # --force-resolved-versions: the shipped binaries are built from the committed pins.
    local flags=(-c release --static-swift-stdlib --force-resolved-versions --scratch-path "$SITEFS_SCRATCH")
    # One product at a time: building every target would include the test kit
    # (Tests/SitefsTestSupport), whose `import Testing` a static-stdlib build cannot see.
    # generate-manual is swift-argument-parser's man page generator (see below).
    local product
    mkdir -p "$SITEFS_SCRATCH"
    for product in sitefs sitefs-server generate-manual; do
        echo "release-build: swift build --product $product (log: $SITEFS_SCRATCH/build-$product.log)"
        swift build "${flags[@]}" --product "$product" >"$SITEFS_SCRATCH/build-$product.log" 2>&1 \
            || { tail -30 "$SITEFS_SCRATCH/build-$product.log" >&2; return 1; }
    done
    local bin
    bin="$(swift build "${flags[@]}" --show-bin-path)"

    # Staged in a fresh folder and moved into place at the end: an interrupted run never
    # leaves a half-made stage for install or package to pick up.
    local next="$SITEFS_STAGE.next"
    rm -rf "$next"
    mkdir -p "$next/bin" "$next/share/man/man1" "$next/share/bash-completion/completions" \
        "$next/share/zsh/site-functions" "$next/share/fish/vendor_completions.d"
    install -m 0755 "$bin/sitefs" "$bin/sitefs-server" "$next/bin/"
    # Debug info is half of a release binary (114 -> 70 MB); an installed tool goes without.
    strip --strip-unneeded "$next/bin/sitefs" "$next/bin/sitefs-server"
    sitefs_check_runtime_libraries "$next/bin/sitefs" "$next/bin/sitefs-server"

    local tool
    for tool in sitefs sitefs-server; do
        sitefs_generate_manual "$bin/generate-manual" "$next/bin/$tool" "$next/share/man/man1"
        "$next/bin/$tool" --generate-completion-script bash >"$next/share/bash-completion/completions/$tool"
        "$next/bin/$tool" --generate-completion-script zsh >"$next/share/zsh/site-functions/_$tool"
        "$next/bin/$tool" --generate-completion-script fish >"$next/share/fish/vendor_completions.d/$tool.fish"
    done

    rm -rf "$SITEFS_STAGE"
    mv "$next" "$SITEFS_STAGE"
    echo "release-build: staged in $SITEFS_STAGE"
}

# The point of --static-swift-stdlib: nothing may come from the toolchain at run time.
sitefs_check_runtime_libraries() {
    local binary toolchain_libs
    for binary in "$@"; do
        toolchain_libs="$(ldd "$binary" | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime|/opt/swift' || true)"
        if [ -n "$toolchain_libs" ]; then
            echo "release-build: $binary still loads the Swift toolchain's libraries:" >&2
            echo "$toolchain_libs" >&2
            return 1
        fi
    done
}

# Man pages, one per command, from the argument parser's own description of the tool
# (`TOOL --experimental-dump-help`), by swift-argument-parser's generate-manual: the tool
# its GenerateManual plugin runs. We run it directly rather than through
# `swift package plugin generate-manual` because the plugin first builds the package
# itself, and `swift package` takes no --static-swift-stdlib: every run recompiled all of
# sitefs in release without it (3 min here), and the next static build compiled it all
# again. The pages are the same (checked byte for byte). The date is the last commit's,
# so pages do not change from build to build.
sitefs_generate_manual() {
    local generator="$1" tool="$2" destination="$3" date pages page name
    date="$(git log -1 --format=%cs 2>/dev/null || date +%F)"
    pages="$destination.generated" # inside the new stage: a failed run's is removed with it
    rm -rf "$pages" && mkdir -p "$pages"
    "$generator" "$tool" --multi-page --date "$date" --output-directory "$pages"
    for page in "$pages"/*.1; do
        # The generator names subcommand pages "sitefs.mount.1"; installed pages follow the
        # usual "sitefs-mount.1" (like git-commit.1), with titles and SEE ALSO to match.
        name="$(basename "$page" .1)"
        sed -e '/^\.\(Dt\|Xr\) /s/\([A-Za-z]\)\.\([A-Za-z]\)/\1-\2/g' "$page" >"$destination/${name//./-}.1"
    done
    rm -rf "$pages"
    [ -e "$destination/$(basename "$tool").1" ] || { echo "release-build: no man page made for $tool" >&2; return 1; }
}

# In a subshell of its own: strict options and the package folder without touching the
# shell that sourced this.
(
    set -euo pipefail
    cd "$SITEFS_ROOT"
    source scripts/lib/swift-env.sh
    sitefs_release_build
)
