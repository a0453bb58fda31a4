/* layout: the offsets of a model's parameters per layer (private to model/:
 * params.c builds them, model.c computes with them; others use the typed
 * views of model.h). Offsets are in floats into Model.params / .grads. */
#ifndef TFM_MODEL_LAYOUT_H
#define TFM_MODEL_LAYOUT_H

#include <stddef.h>

typedef struct { size_t w, b, wo, bo; } AttnP;   /* w: q/k/v (3D, D), b: (3D) */
/* b is NO_PARAM for RMSNorm, which has no bias */
#define NO_PARAM ((size_t)-1)
typedef struct { size_t g, b; } LnP;
typedef struct { size_t w1, b1, w2, b2; } FfnP;
typedef struct { AttnP self; LnP ln1; FfnP ffn; LnP ln2; } EncP;
typedef struct { AttnP self; LnP ln1; AttnP cross; LnP ln2; FfnP ffn; LnP ln3; } DecP;

struct ModelLayout {
    size_t emb_src, emb_tgt, out_proj;
    EncP *enc;
    DecP *dec;
    LnP enc_ln, dec_ln;     /* pre-norm only */
};


#endif
