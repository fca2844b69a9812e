// libvips for sitefs-server's thumbnails. Swift cannot call C variadic functions, and most
// of libvips's API is variadic (options as name/value pairs ending in NULL), so the calls the
// server makes are fixed here, typed, as small wrappers.
#ifndef SITEFS_CVIPS_SHIM_H
#define SITEFS_CVIPS_SHIM_H

#include <stdint.h>
#include <vips/vips.h>

/// Drops libvips's warnings (a truncated or odd file: glib prints them on stderr, outside the
/// server's log); a thumbnail that fails is logged by the server, once, with libvips's error.
static inline void sitefs_vips_drop_log(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
    (void)domain; (void)level; (void)message; (void)data;
}

/// Starts libvips once per process (the caller makes sure of "once") and narrows it to what
/// thumbnails need:
/// - no operation cache: it would keep decoded sources alive between requests;
/// - one worker thread per image: the server bounds how many images are made at once;
/// - no run-time code generation (orc's vector code): the packaged unit runs with
///   MemoryDenyWriteExecute=yes, and thumbnails are only about 10% slower without it;
/// - only the loaders of the formats the server thumbnails. libvips picks a loader by
///   sniffing the bytes, whatever the file is called, so without this a file named `x.png`
///   could reach ImageMagick, librsvg or any other loader Debian's build carries.
/// 0, or -1 (then `sitefs_vips_take_error` says why).
static inline int sitefs_vips_start(void) {
    if (VIPS_INIT("sitefs-server")) return -1;
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING, sitefs_vips_drop_log, NULL);
    vips_cache_set_max(0);
    vips_concurrency_set(1);
    vips_vector_set_enabled(FALSE);
    vips_operation_block_set("VipsForeignLoad", TRUE);
    vips_operation_block_set("VipsForeignLoadJpeg", FALSE);
    vips_operation_block_set("VipsForeignLoadPng", FALSE);
    vips_operation_block_set("VipsForeignLoadNsgif", FALSE);
    vips_operation_block_set("VipsForeignLoadWebp", FALSE);
    vips_operation_block_set("VipsForeignLoadTiff", FALSE);
    vips_operation_block_set("VipsForeignLoadPdf", FALSE);
    return 0;
}

/// The thumbnail of `source` as PNG bytes: the image scaled to fit in a `box` x `box`
/// square, aspect kept, never enlarged (`VIPS_SIZE_DOWN`), EXIF orientation applied, metadata
/// stripped; a PDF's first page. The header is read first, and an image of more than
/// `max_pixels` pixels is refused before any pixel is decoded (a small compressed file can
/// declare a huge image). 0 with `*out` (free it with `sitefs_vips_free`), or -1.
static inline int sitefs_vips_thumbnail_source_png(VipsSource *source, int box, int64_t max_pixels,
                                                   void **out, size_t *out_length) {
    VipsImage *header = vips_image_new_from_source(source, "", NULL);
    if (header == NULL) return -1;
    int64_t width = vips_image_get_width(header), height = vips_image_get_height(header);
    g_object_unref(header);
    if (width <= 0 || height <= 0 || width * height > max_pixels) {
        vips_error("sitefs", "the image is %lld x %lld pixels, more than %lld in all",
                   (long long)width, (long long)height, (long long)max_pixels);
        return -1;
    }
    VipsImage *thumbnail = NULL;
    if (vips_thumbnail_source(source, &thumbnail, box, "height", box, "size", VIPS_SIZE_DOWN, NULL)) return -1;
    int result = vips_pngsave_buffer(thumbnail, out, out_length, "strip", TRUE, NULL);
    g_object_unref(thumbnail);
    return result;
}

/// `sitefs_vips_thumbnail_source_png` over a file (a blob), read as the loader needs it.
static inline int sitefs_vips_thumbnail_file_png(const char *path, int box, int64_t max_pixels,
                                                 void **out, size_t *out_length) {
    VipsSource *source = vips_source_new_from_file(path);
    if (source == NULL) return -1;
    int result = sitefs_vips_thumbnail_source_png(source, box, max_pixels, out, out_length);
    g_object_unref(source);
    return result;
}

/// `sitefs_vips_thumbnail_source_png` over bytes in memory (a picture inside an office
/// document), which must stay valid for the call.
static inline int sitefs_vips_thumbnail_buffer_png(const void *bytes, size_t length, int box, int64_t max_pixels,
                                                   void **out, size_t *out_length) {
    VipsSource *source = vips_source_new_from_memory(bytes, length);
    if (source == NULL) return -1;
    int result = sitefs_vips_thumbnail_source_png(source, box, max_pixels, out, out_length);
    g_object_unref(source);
    return result;
}

/// Frees what libvips allocated (`*out` above, `sitefs_vips_take_error`'s text).
static inline void sitefs_vips_free(void *pointer) { g_free(pointer); }

/// libvips's error text so far (a copy the caller frees with `sitefs_vips_free`), and clears
/// it. The buffer is process-wide: with two thumbnails failing at once, one may carry both.
static inline char *sitefs_vips_take_error(void) { return vips_error_buffer_copy(); }

#endif
