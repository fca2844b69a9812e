// The C surface of libfuse 3 (low-level API) that SitefsFUSE uses.
//
// Swift imports the functions, structs and simple constant macros (FUSE_CAP_*,
// FUSE_SET_ATTR_*) of <fuse_lowlevel.h> directly. This header adds only what Swift cannot
// see or call safely: the API version macro, function-like macros (fuse_session_loop_mt
// is a macro that picks a versioned symbol), accessors for fuse_file_info's bitfields
// (direct_io, keep_cache, flush, ...), and zero-initialised structs, so fields sitefs does
// not set are never stack garbage that libfuse copies to the kernel.
#ifndef SITEFS_CFUSE_SHIM_H
#define SITEFS_CFUSE_SHIM_H

// 3.12 is the newest API level libfuse 3.14 distinguishes (fuse_loop_config became opaque
// and is configured through fuse_loop_cfg_*); later values select nothing further in 3.14.
#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

// MARK: Session loop

/// `fuse_session_loop_mt` is a macro over `fuse_session_loop_mt_312` (or the versioned
/// default symbol); Swift cannot call macros.
static inline int sitefs_session_loop_mt(struct fuse_session *se, struct fuse_loop_config *config) {
    return fuse_session_loop_mt(se, config);
}

// MARK: fuse_file_info bitfields

static inline void sitefs_fi_set_direct_io(struct fuse_file_info *fi, int value) { fi->direct_io = value ? 1 : 0; }
static inline void sitefs_fi_set_keep_cache(struct fuse_file_info *fi, int value) { fi->keep_cache = value ? 1 : 0; }
static inline int sitefs_fi_direct_io(const struct fuse_file_info *fi) { return fi->direct_io; }
static inline int sitefs_fi_keep_cache(const struct fuse_file_info *fi) { return fi->keep_cache; }
static inline int sitefs_fi_flush(const struct fuse_file_info *fi) { return fi->flush; }
static inline int sitefs_fi_writepage(const struct fuse_file_info *fi) { return fi->writepage; }

/// A fresh, all-zero fuse_file_info carrying only a handle (the reply structs libfuse reads).
static inline struct fuse_file_info sitefs_fi_make(uint64_t fh) {
    struct fuse_file_info fi;
    memset(&fi, 0, sizeof fi);
    fi.fh = fh;
    return fi;
}

// MARK: Zeroed structs

/// All-zero fuse_entry_param (ino 0 means "no entry" to readdirplus: nothing is linked or counted).
static inline struct fuse_entry_param sitefs_entry_param_zero(void) {
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    return e;
}

static inline struct stat sitefs_stat_zero(void) {
    struct stat st;
    memset(&st, 0, sizeof st);
    return st;
}

static inline struct statvfs sitefs_statvfs_zero(void) {
    struct statvfs st;
    memset(&st, 0, sizeof st);
    return st;
}

#endif
