// libxml2's push (SAX2) parser, for WebDAV multistatus bodies parsed as they arrive.
#ifndef SITEFS_CLIBXML2_SHIM_H
#define SITEFS_CLIBXML2_SHIM_H

#include <libxml/parser.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>

// XML_SAX2_MAGIC is a cast macro Swift does not import.
static inline unsigned int sitefs_xml_sax2_magic(void) { return XML_SAX2_MAGIC; }

#endif
