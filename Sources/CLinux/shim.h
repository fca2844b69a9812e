// Linux and glibc calls that Swift's Glibc module does not export: <sys/xattr.h>, and the
// _GNU_SOURCE declarations of copy_file_range(2), renameat2(2) and accept4(2). Declared here so the
// compiler checks every call against the real prototypes (no dlsym, no unsafeBitCast).
#ifndef SITEFS_CLINUX_SHIM_H
#define SITEFS_CLINUX_SHIM_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/xattr.h>

// The prototypes glibc declares only under _GNU_SOURCE, which this header cannot switch on
// for a <unistd.h>/<stdio.h> that Swift's Glibc module has already included.
extern ssize_t copy_file_range(int fd_in, off_t *off_in, int fd_out, off_t *off_out, size_t len, unsigned int flags);
extern int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags);
struct sockaddr;
extern int accept4(int sockfd, struct sockaddr *addr, unsigned int *addrlen, int flags);

#endif
