/* spm_proto: reads the ModelProto protobuf of a SentencePiece model file.
 *
 * A reader of our own rather than libprotobuf-c: protobuf-c needs C code
 * generated from sentencepiece_model.proto by protoc-c at build time (a
 * build tool and a copied .proto for a dozen fields), while the wire format
 * is small: varints, fixed 32/64-bit values and length-delimited fields.
 * Here every field is read with bounds checked against its enclosing
 * message, unknown fields are skipped, and a field that runs past its
 * message, an overlong varint or a group (wire types 3/4) means a damaged
 * file. Field numbers: sentencepiece_model.proto (0.1.97). */
#include <stdlib.h>
#include <string.h>

#include "text/spm_internal.h"

typedef struct {
    const unsigned char *p, *end;
} Rd;

typedef struct {
    int field, wire;
    uint64_t v;             /* wire 0, 1, 5 */
    const unsigned char *s; /* wire 2 */
    size_t n;
} Field;

static bool read_varint(Rd *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p == r->end) return false;
        unsigned char b = *r->p++;
        x |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

/* The next field of the message r reads: 1, 0 at its end, -1 when damaged. */
static int next_field(Rd *r, Field *f)
{
    if (r->p == r->end) return 0;
    uint64_t tag;
    if (!read_varint(r, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1FFFFFFF) return -1;
    f->field = (int)(tag >> 3);
    f->wire = (int)(tag & 7);
    switch (f->wire) {
    case 0:
        return read_varint(r, &f->v) ? 1 : -1;
    case 1:
    case 5: {
        size_t k = f->wire == 1 ? 8 : 4;
        if ((size_t)(r->end - r->p) < k) return -1;
        f->v = 0;
        for (size_t i = 0; i < k; i++) f->v |= (uint64_t)r->p[i] << (8 * i);
        r->p += k;
        return 1;
    }
    case 2: {
        uint64_t n;
        if (!read_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return -1;
        f->s = r->p;
        f->n = (size_t)n;
        r->p += n;
        return 1;
    }
    default:
        return -1;
    }
}

#define DAMAGED(what) err_set(err, TFM_ERR_FORMAT, "%s: damaged SentencePiece model (%s)", name, what)

/* The field must have wire type want, else the file is damaged. */
static bool wire_is(const Field *f, int want) { return f->wire == want; }

static SpmStr str_of(const Field *f) { return (SpmStr){(const char *)f->s, f->n}; }

static TfmStatus parse_piece(SpmProto *p, const Field *outer, const char *name, TfmErr *err)
{
    Rd r = {outer->s, outer->s + outer->n};
    Field f;
    int got;
    int i = p->n_pieces;
    p->piece[i] = (SpmStr){NULL, 0};
    p->score[i] = 0.0f;
    p->type[i] = SPM_NORMAL;
    while ((got = next_field(&r, &f)) > 0) {
        if (f.field == 1) {
            if (!wire_is(&f, 2)) return DAMAGED("a piece's text");
            p->piece[i] = str_of(&f);
        } else if (f.field == 2) {
            if (!wire_is(&f, 5)) return DAMAGED("a piece's score");
            uint32_t bits = (uint32_t)f.v;
            memcpy(&p->score[i], &bits, sizeof bits);
        } else if (f.field == 3) {
            if (!wire_is(&f, 0)) return DAMAGED("a piece's type");
            if (f.v < SPM_NORMAL || f.v > SPM_BYTE)
                return err_set(err, TFM_ERR_FORMAT, "%s: piece %d has type %llu, which is "
                               "not supported", name, i, (unsigned long long)f.v);
            p->type[i] = (uint8_t)f.v;
        }
    }
    if (got < 0) return DAMAGED("a piece");
    p->n_pieces++;
    return TFM_OK;
}

static TfmStatus parse_trainer(SpmProto *p, const Field *outer, const char *name, TfmErr *err)
{
    Rd r = {outer->s, outer->s + outer->n};
    Field f;
    int got;
    while ((got = next_field(&r, &f)) > 0) {
        switch (f.field) {
        case 3:     /* model_type */
            if (!wire_is(&f, 0)) return DAMAGED("trainer_spec.model_type");
            p->model_type = f.v > 1000 ? 1000 : (int)f.v;
            break;
        case 24:    /* treat_whitespace_as_suffix */
            if (!wire_is(&f, 0)) return DAMAGED("trainer_spec");
            p->treat_ws_as_suffix = f.v != 0;
            break;
        case 35:    /* byte_fallback */
            if (!wire_is(&f, 0)) return DAMAGED("trainer_spec");
            p->byte_fallback = f.v != 0;
            break;
        case 44:    /* unk_surface */
            if (!wire_is(&f, 2)) return DAMAGED("trainer_spec");
            p->has_unk_surface = true;
            p->unk_surface = str_of(&f);
            break;
        default:
            break;  /* training options: no effect on encoding */
        }
    }
    return got < 0 ? DAMAGED("trainer_spec") : TFM_OK;
}

static TfmStatus parse_normalizer(SpmProto *p, const Field *outer, bool denorm, const char *name,
                                  TfmErr *err)
{
    Rd r = {outer->s, outer->s + outer->n};
    Field f;
    int got;
    const char *what = denorm ? "denormalizer_spec" : "normalizer_spec";
    while ((got = next_field(&r, &f)) > 0) {
        bool is_str = f.field == 1 || f.field == 2 || f.field == 6;
        bool is_bool = f.field >= 3 && f.field <= 5;
        if ((is_str && !wire_is(&f, 2)) || (is_bool && !wire_is(&f, 0))) return DAMAGED(what);
        if (denorm) {
            if (f.field == 2) p->denorm_charsmap = str_of(&f);
            continue;
        }
        switch (f.field) {
        case 1: p->norm_name = str_of(&f); break;
        case 2: p->charsmap = str_of(&f); break;
        case 3: p->add_dummy_prefix = f.v != 0; break;
        case 4: p->remove_extra_ws = f.v != 0; break;
        case 5: p->escape_ws = f.v != 0; break;
        case 6: p->has_rule_tsv = f.n > 0; break;
        default: break;
        }
    }
    return got < 0 ? DAMAGED(what) : TFM_OK;
}

static TfmStatus parse_self_test(SpmProto *p, const Field *outer, const char *name, TfmErr *err)
{
    Rd r = {outer->s, outer->s + outer->n};
    Field f;
    int got;
    while ((got = next_field(&r, &f)) > 0)
        if (f.field == 1 && wire_is(&f, 2)) p->n_self_test++;
    return got < 0 ? DAMAGED("self_test_data") : TFM_OK;
}

TfmStatus spm_proto_parse(SpmProto *p, const char *buf, size_t len, const char *name,
                          TfmErr *err)
{
    *p = (SpmProto){.model_type = SPM_MODEL_UNIGRAM, .add_dummy_prefix = true,
                    .remove_extra_ws = true, .escape_ws = true};
    const unsigned char *b = (const unsigned char *)buf;
    /* First pass: count the pieces, so the arrays are sized once. */
    Rd r = {b, b + len};
    Field f;
    int got;
    size_t n = 0;
    while ((got = next_field(&r, &f)) > 0)
        if (f.field == 1) {
            /* a piece holds its text, at least one byte: 3 bytes at least
             * (counted before anything is sized by n: a file of empty
             * pieces would otherwise ask for 10x its size) */
            if (!wire_is(&f, 2) || f.n < 3) return DAMAGED("pieces");
            n++;
        }
    if (got < 0) return DAMAGED("truncated or not a protobuf");
    if (n == 0) return err_set(err, TFM_ERR_FORMAT, "%s: SentencePiece model has no pieces", name);
    if (n > (1u << 24))
        return err_set(err, TFM_ERR_FORMAT, "%s: SentencePiece model has %zu pieces (at most %u)",
                       name, n, 1u << 24);
    p->piece = xmalloc(n * sizeof *p->piece, err);
    p->score = xmalloc(n * sizeof *p->score, err);
    p->type = xmalloc(n, err);
    if (!p->piece || !p->score || !p->type) return TFM_ERR_NOMEM;
    r = (Rd){b, b + len};
    TfmStatus st = TFM_OK;
    bool has_trainer = false, has_normalizer = false;
    while (st == TFM_OK && next_field(&r, &f) > 0) {
        if (f.field == 1) st = parse_piece(p, &f, name, err);
        else if (f.field == 2 && wire_is(&f, 2)) {
            has_trainer = true;
            st = parse_trainer(p, &f, name, err);
        } else if (f.field == 3 && wire_is(&f, 2)) {
            has_normalizer = true;
            st = parse_normalizer(p, &f, false, name, err);
        }
        else if (f.field == 4 && wire_is(&f, 2)) st = parse_self_test(p, &f, name, err);
        else if (f.field == 5 && wire_is(&f, 2)) st = parse_normalizer(p, &f, true, name, err);
        else if (f.field >= 2 && f.field <= 5) st = DAMAGED("a spec is not a message");
    }
    /* spm_train writes the pieces, then trainer_spec, then normalizer_spec:
     * a file cut at a field's end parses, but lacks one of these */
    if (st == TFM_OK && (!has_trainer || !has_normalizer))
        st = DAMAGED(!has_trainer ? "no trainer_spec: truncated?" : "no normalizer_spec: truncated?");
    return st;
}

void spm_proto_free(SpmProto *p)
{
    free(p->piece);
    free(p->score);
    free(p->type);
    *p = (SpmProto){0};
}

bool spm_sniff(const void *buf, size_t len)
{
    /* field 1 (pieces), wire type 2: tag 0x0A, a length, then the piece's
     * own field 1 (its text): tag 0x0A again, and a length. */
    Rd r = {buf, (const unsigned char *)buf + len};
    uint64_t tag, n;
    if (!read_varint(&r, &tag) || tag != 0x0A) return false;
    if (!read_varint(&r, &n) || n == 0) return false;
    if (!read_varint(&r, &tag) || tag != 0x0A) return false;
    return read_varint(&r, &n) && n > 0;
}
