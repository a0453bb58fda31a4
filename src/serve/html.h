/* html: LibreTranslate's "format": "html" (Mastodon sends its posts so):
 * a document split into the markup, kept byte for byte, and the text
 * segments between tags, each translated as one sentence. Tags with their
 * attributes, comments, <!DOCTYPE>/<?...?>, and everything inside <script>,
 * <style>, <code> and <pre> are markup; so is the whitespace around a
 * segment. A segment's entities (&amp; &lt; &#228; &#xE4; &nbsp; ...) are
 * decoded and its inner whitespace runs become one space before it is
 * translated; the translation is escaped again (& < >) where the segment
 * was. A segment with no letter or digit ("@" of a mention) is kept as
 * it is. Any bytes are taken: a '<' that opens no tag is text, an unclosed
 * tag, quote or comment is markup to the end. */
#ifndef TFM_SERVE_HTML_H
#define TFM_SERVE_HTML_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"

typedef struct {
    /* s[0..n) of the document, to be kept as it is */
    bool (*markup)(void *ctx, const char *s, size_t n);
    /* a segment to translate: decoded, trimmed, never empty */
    bool (*text)(void *ctx, const char *s, size_t n);
    void *ctx;
} HtmlSink;

/* Calls the sink for the pieces of doc[0..n) in order (markup pieces may
 * come several in a row). scratch holds the decoded text. Returns false as
 * soon as a call does (or scratch runs out of memory). */
bool html_split(const char *doc, size_t n, Buf *scratch, const HtmlSink *sink);

/* s[0..n) with & < > escaped, as the characters of a JSON string (no quotes). */
void html_put_escaped_json(Buf *out, const char *s, size_t n);

#endif
