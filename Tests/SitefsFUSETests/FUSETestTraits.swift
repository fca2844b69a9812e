import SitefsTestSupport
import Testing

extension Trait where Self == ConditionTrait {
    /// Every suite here mounts for real; only a machine without /dev/fuse may skip them.
    static var requiresFUSE: Self {
        .enabled(if: fuseAvailable, "/dev/fuse is absent: this machine cannot mount FUSE filesystems")
    }
}
