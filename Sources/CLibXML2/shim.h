// libxml2's push (SAX2) parser, for WebDAV multistatus bodies parsed as they arrive and the
// server's document text for search (ODF and OOXML parts streamed out of their zips).
#ifndef SITEFS_CLIBXML2_SHIM_H
#define SITEFS_CLIBXML2_SHIM_H

// Debian's libxml2 is built with ICU, and encoding.h then includes the system's
// <unicode/ucnv.h>, whose types clash with the copy of ICU Foundation carries (`UErrorCode`
// "has different definitions in different modules") in any module that imports both. Nothing
// here uses libxml2's ICU converters (they only add two trailing pointers to
// xmlCharEncodingHandler, which Swift never allocates), so the header is read without them:
// the library itself is unchanged, and a module may import Foundation and this.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>

// XML_SAX2_MAGIC is a cast macro Swift does not import.
static inline unsigned int sitefs_xml_sax2_magic(void) { return XML_SAX2_MAGIC; }

#endif
