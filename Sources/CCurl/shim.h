// Swift cannot call C variadic functions, and curl_easy_setopt / curl_easy_getinfo are
// variadic. These typed wrappers give Swift one non-variadic entry point per argument
// type, so each call site states exactly what libcurl will read from the va_list.
#ifndef SITEFS_CCURL_SHIM_H
#define SITEFS_CCURL_SHIM_H

#include <curl/curl.h>

// MARK: - Global state

/// curl_global_init with the default flags; the macro CURL_GLOBAL_ALL does not import.
static inline CURLcode sitefs_curl_global_init(void) {
    return curl_global_init(CURL_GLOBAL_ALL);
}

// MARK: - curl_easy_setopt

/// For CURLOPTTYPE_LONG options (flags, timeouts, enums).
static inline CURLcode sitefs_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

/// For CURLOPTTYPE_STRINGPOINT options; libcurl copies the string.
static inline CURLcode sitefs_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/// For CURLOPTTYPE_OBJECTPOINT / CBPOINT options (callback user data, error buffer).
/// libcurl keeps the pointer without copying what it points to.
static inline CURLcode sitefs_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

/// For CURLOPTTYPE_SLISTPOINT options (CURLOPT_HTTPHEADER); the list must outlive the transfer.
static inline CURLcode sitefs_curl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/// For CURLOPTTYPE_OFF_T options (sizes of uploads, which may exceed 2 GiB).
static inline CURLcode sitefs_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/// The shape shared by CURLOPT_WRITEFUNCTION, CURLOPT_READFUNCTION and CURLOPT_HEADERFUNCTION.
typedef size_t (*sitefs_curl_data_callback)(char *buffer, size_t size, size_t count, void *userdata);

/// For the write, read and header callbacks.
static inline CURLcode sitefs_curl_easy_setopt_data_callback(CURL *handle, CURLoption option, sitefs_curl_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

/// For CURLOPT_SEEKFUNCTION, which libcurl calls to rewind an upload it must resend.
static inline CURLcode sitefs_curl_easy_setopt_seek_callback(CURL *handle, CURLoption option, curl_seek_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

/// For CURLOPT_XFERINFOFUNCTION, which libcurl calls as data moves and about once a second
/// while it does not; a non-zero return aborts the transfer (CURLE_ABORTED_BY_CALLBACK).
static inline CURLcode sitefs_curl_easy_setopt_xferinfo_callback(CURL *handle, CURLoption option, curl_xferinfo_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

// MARK: - curl_easy_getinfo

/// For CURLINFO_LONG values (CURLINFO_RESPONSE_CODE, CURLINFO_OS_ERRNO).
static inline CURLcode sitefs_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

/// For CURLINFO_OFF_T values (sizes and times as curl_off_t).
static inline CURLcode sitefs_curl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

/// For CURLINFO_STRING values; the string belongs to the handle and lives until its next use.
static inline CURLcode sitefs_curl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

// MARK: - Callback return values (macros with casts or large values do not import cleanly)

/// Returned by a write callback to abort the transfer with CURLE_WRITE_ERROR.
static const size_t SITEFS_CURL_WRITEFUNC_ERROR = CURL_WRITEFUNC_ERROR;
/// Returned by a read callback to abort the transfer with CURLE_ABORTED_BY_CALLBACK.
static const size_t SITEFS_CURL_READFUNC_ABORT = CURL_READFUNC_ABORT;
/// Returned by a seek callback: done, failed, or impossible.
static const int SITEFS_CURL_SEEKFUNC_OK = CURL_SEEKFUNC_OK;
static const int SITEFS_CURL_SEEKFUNC_FAIL = CURL_SEEKFUNC_FAIL;
static const int SITEFS_CURL_SEEKFUNC_CANTSEEK = CURL_SEEKFUNC_CANTSEEK;
/// The size libcurl requires for a CURLOPT_ERRORBUFFER buffer.
static const size_t SITEFS_CURL_ERROR_SIZE = CURL_ERROR_SIZE;

#endif
