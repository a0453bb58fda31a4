/* json_strict: parsing a JSON text strictly (RFC 8259) with cJSON; errors
 * name the line and column. Used for configs. */
#ifndef TFM_JSON_STRICT_H
#define TFM_JSON_STRICT_H

#include <stddef.h>
#include <cJSON.h>

#include "base/err.h"

/* Parses text[0..len) (a UTF-8 byte order mark is skipped) into *out (the
 * caller frees it with cJSON_Delete). TFM_ERR_CONFIG with "line N column M:
 * ..." for an empty text, a NUL byte, a syntax error, text after the value,
 * a raw control character (or \u0000) in a string or outside one, or a
 * number JSON does not allow; *out is then NULL. */
TfmStatus json_strict_parse(const char *text, size_t len, cJSON **out, TfmErr *err);

#endif
